"""The fast sweep's compile workers: a kernel variant whose compile never ends is given up after
the timeout and the workers are replaced, so the rest still compiles (real spawned worker
processes; the compile function stands in for Triton's, which needs a GPU)."""

import json
import subprocess
import sys
import textwrap


def test_a_stuck_compile_is_given_up_and_the_rest_still_compiles(tmp_path):
    script = tmp_path / "main.py"
    script.write_text(
        textwrap.dedent("""
        import json, sys, time
        from torch_diode.collection.fast_sweep import KernelCompiler
        from torch_diode.types import KernelConfig, Problem

        def compile_one(problem, config):
            if config.block_m == 128:
                time.sleep(3600)  # a compile that never ends
            return "CompilationError: no" if config.block_n == 32 else None

        if __name__ == "__main__":
            problem = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
            configs = [
                KernelConfig("triton::mm", bm, bn, 32, 8, 2, 4)
                for bm, bn in [(64, 64), (64, 32), (128, 64), (32, 64), (16, 128), (64, 128)]
            ]
            start = time.monotonic()
            with KernelCompiler(2, timeout_s=float(sys.argv[1]), compile_one=compile_one) as compiler:
                keys = [compiler.submit(problem, c) for c in configs]
                errors = [compiler.result(k) for k in keys]
                timeouts = compiler.timeouts
            print(json.dumps({"errors": errors, "timeouts": timeouts, "seconds": time.monotonic() - start}))
    """)
    )
    # the timeout also covers the start of the workers (spawned, importing torch) that the first
    # variant and the one after a replacement wait for: well above it on a loaded machine
    done = subprocess.run(
        [sys.executable, str(script), "15"], capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["errors"] == [None, "CompilationError: no", "compile timed out after 15 s", None, None, None]
    assert report["timeouts"] == 1
    # nowhere near the stuck compile's hour, and leaving the context did not wait for the killed worker
    assert report["seconds"] < 120, report


def test_without_new_workers_the_rest_compiles_in_this_process(tmp_path):
    """Where the replacement workers cannot be had, the variants left are compiled in this
    process (as after a crashed pool) and the stats say so."""
    script = tmp_path / "main.py"
    script.write_text(
        textwrap.dedent("""
        import json, logging, time
        from torch_diode.collection.fast_sweep import KernelCompiler
        from torch_diode.types import KernelConfig, Problem

        def compile_one(problem, config):
            if config.block_m == 128:
                time.sleep(3600)
            return "CompilationError: no" if config.block_n == 32 else None

        class NoSecondPool(KernelCompiler):
            pools = 0

            def _new_pool(self):
                NoSecondPool.pools += 1
                if NoSecondPool.pools > 1:
                    raise OSError("no more processes")
                return super()._new_pool()

        if __name__ == "__main__":
            logging.basicConfig(level=logging.WARNING)
            problem = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
            configs = [KernelConfig("triton::mm", bm, bn, 32, 8, 2, 4) for bm, bn in [(128, 64), (64, 64), (64, 32)]]
            with NoSecondPool(2, timeout_s=3.0, compile_one=compile_one) as compiler:
                keys = [compiler.submit(problem, c) for c in configs]
                errors = [compiler.result(k) for k in keys]
                print(json.dumps({"errors": errors, "broken": compiler.pool_broken, "pool": compiler.pool is None}))
    """)
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "errors": ["compile timed out after 3 s", None, "CompilationError: no"],
        "broken": True,
        "pool": True,
    }
    assert "no new compile workers (OSError: no more processes)" in done.stderr
