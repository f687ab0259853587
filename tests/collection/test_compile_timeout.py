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
        import json, os, sys, time
        from torch_diode.collection.fast_sweep import KernelCompiler
        from torch_diode.types import KernelConfig, Problem

        def compile_one(problem, config):
            if config.block_m == 128:
                time.sleep(3600)  # a compile that never ends
            if config.block_m == 16:
                time.sleep(1.0)  # slow, within the timeout
            return "CompilationError: no" if config.block_n == 32 else None

        if __name__ == "__main__":
            problem = Problem("mm", 1, 512, 512, 512, "float16", "float16", "float16")
            configs = [
                KernelConfig("triton::mm", bm, bn, 32, 8, 2, 4)
                for bm, bn in [(64, 64), (128, 64), (16, 64), (64, 32), (128, 128), (32, 64), (16, 128), (64, 128)]
            ]
            start = time.monotonic()
            with KernelCompiler(3, timeout_s=float(sys.argv[1]), compile_one=compile_one) as compiler:
                keys = [compiler.submit(problem, c) for c in configs]
                errors = [compiler.result(k) for k in keys]
                timeouts = compiler.timeouts
            print(json.dumps({"errors": errors, "timeouts": timeouts, "seconds": time.monotonic() - start}))
    """)
    )
    done = subprocess.run([sys.executable, str(script), "8"], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    stuck = "compile timed out after 8 s"
    assert report["errors"] == [None, stuck, None, "CompilationError: no", stuck, None, None, None]
    assert report["timeouts"] == 2
    # two timeouts and a few worker starts: nowhere near the stuck compiles' hour, and the
    # context's exit did not wait for the killed workers
    assert report["seconds"] < 120, report
