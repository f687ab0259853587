"""The fast sweep's compile workers: a kernel variant whose compile never ends is given up after
the timeout and the workers are replaced, so the rest still compiles (real spawned worker
processes; the compile function stands in for Triton's, which needs a GPU). Each compile writes
the process it ran in, so the tests see which variants the new workers (or this process) did."""

import json
import subprocess
import sys
import textwrap

HEADER = """
import json, logging, os, subprocess, sys, time
from pathlib import Path
from torch_diode.collection.kernel_compiler import KernelCompiler
from torch_diode.types import KernelConfig, Problem

def compile_one(problem, config):
    Path(f"{config.block_m}x{config.block_n}.pid").write_text(str(os.getpid()))
    if config.block_m == 128:  # stuck: a compiler child that never ends, holding the worker's pipes
        subprocess.run(["sleep", sys.argv[1]], close_fds=False)
    if config.block_m == 16:
        time.sleep(4.0)  # still compiling when the workers are replaced
    return "CompilationError: no" if config.block_n == 32 else None

def pid(config):
    return int(Path(f"{config[0]}x{config[1]}.pid").read_text())

PROBLEM = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
"""


def _run(tmp_path, body: str, stuck_s: str) -> dict:
    script = tmp_path / "main.py"
    script.write_text(HEADER + textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, str(script), stuck_s], capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_a_stuck_compile_is_given_up_and_new_workers_compile_the_rest(tmp_path):
    """Two stuck variants hold both workers; each is given up at the timeout and the workers
    replaced, and the variants behind them compile in the third pool's workers. The process exits
    at once (the killed workers' compiler children do not hold it)."""
    report = _run(
        tmp_path,
        """
        if __name__ == "__main__":
            configs = [(128, 64), (128, 128), (64, 64), (64, 32), (32, 64)]
            start = time.monotonic()
            with KernelCompiler(2, timeout_s=2.0, compile_one=compile_one) as compiler:
                keys = [compiler.submit(PROBLEM, KernelConfig("triton::mm", m, n, 32, 8, 2, 4)) for m, n in configs]
                errors = [compiler.result(k) for k in keys]
                timeouts = compiler.timeouts
            first = {pid(c) for c in configs[:2]} | {os.getpid()}
            rest_in_new_workers = all(pid(c) not in first for c in configs[2:])
            print(json.dumps({"errors": errors, "timeouts": timeouts, "seconds": time.monotonic() - start,
                              "rest_in_new_workers": rest_in_new_workers}))
        """,
        "3601",
    )
    stuck = "compile timed out after 2 s"
    assert report["errors"] == [stuck, stuck, None, "CompilationError: no", None]
    assert report["timeouts"] == 2 and report["rest_in_new_workers"]
    assert report["seconds"] < 120, report
    out = subprocess.run(["pgrep", "-f", "sleep 3601"], capture_output=True, text=True)
    assert not out.stdout.strip(), "a killed worker's compiler is still running"


def test_without_new_workers_the_rest_compiles_in_this_process(tmp_path):
    """Where no replacement workers can be had, a variant still compiling when the workers were
    killed, and those after it, are compiled in this process (as after a crashed pool)."""
    report = _run(
        tmp_path,
        """
        class NoSecondPool(KernelCompiler):
            pools = 0

            def _new_pool(self):
                NoSecondPool.pools += 1
                if NoSecondPool.pools > 1:
                    raise OSError("no more processes")
                return super()._new_pool()

        if __name__ == "__main__":
            logging.basicConfig(level=logging.WARNING)
            configs = [(128, 64), (16, 64), (64, 32)]
            with NoSecondPool(2, timeout_s=2.0, compile_one=compile_one) as compiler:
                keys = [compiler.submit(PROBLEM, KernelConfig("triton::mm", m, n, 32, 8, 2, 4)) for m, n in configs]
                errors = [compiler.result(k) for k in keys]
                print(json.dumps({"errors": errors, "broken": compiler.pool_broken,
                                  "here": [pid(c) == os.getpid() for c in configs[1:]]}))
        """,
        "3602",
    )
    assert report["errors"] == ["compile timed out after 2 s", None, "CompilationError: no"]
    assert report["broken"] and report["here"] == [True, True]
    assert "no new compile workers (OSError: no more processes)" in report["stderr"]


def test_a_resumed_sweep_with_nothing_left_starts_no_compile_workers(tmp_path, monkeypatch):
    """The fast sweep resumed on a file that holds every problem returns before it allocates its
    flush buffer and starts its compile workers (on a GPU machine, seconds per file of collect.sh's
    remeasure loops). The sweep's body runs on the CPU here: with nothing to measure it needs no GPU."""
    from torch_diode.collection import fast_sweep
    from torch_diode.dataset_io import save_dataset
    from torch_diode.hardware import detect_hardware
    from torch_diode.types import Dataset, KernelConfig, Problem, TimedConfig

    problems = [Problem("mm", 1, m, 64, 64, "float16", "float16", "float16") for m in (32, 48)]
    done = Dataset()
    for p in problems:
        done.add(detect_hardware("cpu"), p, [TimedConfig(KernelConfig("aten::mm"), 5.0)])
    save_dataset(done, tmp_path / "done.json")

    def not_with_nothing_to_measure(*args, **kwargs):
        raise AssertionError("the flush buffer or the compile workers made with nothing to measure")

    monkeypatch.setattr(fast_sweep, "flush_buffer", not_with_nothing_to_measure)
    monkeypatch.setattr(fast_sweep, "KernelCompiler", not_with_nothing_to_measure)
    sweep = fast_sweep.FastSweep(device="cpu", progress=False)
    summary = sweep._run(problems, tmp_path / "done.json", None, None)
    assert summary.problems_resumed == 2 and summary.problems_measured == 0


def test_compile_workers_import_torch_diode_without_its_registration(tmp_path):
    """The workers (spawned: each imports torch_diode to unpickle its call) start with
    TORCH_DIODE_NO_AUTOREGISTER set, so that none registers the shipped model (on a GPU machine:
    CUDA, the model file and Inductor's choices, in each of them); the caller's environment is as
    it was, and the TRITON_PTXAS_PATH it set (the handler's ptxas) reaches them."""
    report = _run(
        tmp_path,
        """
        def registration(problem, config):
            import torch_diode
            return json.dumps([torch_diode.config.autoregister, os.environ.get("TRITON_PTXAS_PATH")])

        if __name__ == "__main__":
            os.environ["TRITON_PTXAS_PATH"] = "/opt/ptxas"
            with KernelCompiler(2, compile_one=registration) as compiler:
                key = compiler.submit(PROBLEM, KernelConfig("triton::mm", 64, 64, 32, 8, 2, 4))
                worker = json.loads(compiler.result(key))
            print(json.dumps({"worker": worker, "here": os.environ.get("TORCH_DIODE_NO_AUTOREGISTER")}))
        """,
        "0",
    )
    assert report["worker"] == [False, "/opt/ptxas"]
    assert report["here"] is None
