"""An unsure decision's choices are compiled once, in Inductor's worker pool: with the handler
installed (the import's registration), the compiling process uses the workers' ptxas
(torch_diode.config.worker_ptxas), so Inductor's benchmark of the choices finds the kernels the
workers compiled in Triton's cache. Each run is a fresh process (Triton reads the ptxas version
once per process) with new caches, counting the Triton compiles to cubin in the compiling thread
during the compile of an attention bmm of 197 tokens (rows not 16-byte aligned), once Inductor's
worker pool is up (until then Inductor compiles in this process whatever the ptxas). The runs set
TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN=1, so that the shipped model is unsure of every misaligned
problem whatever its held-out figure: the decision benchmarks its choices."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch

pytestmark = pytest.mark.gpu

SCRIPT = textwrap.dedent("""
    import json, os, threading
    import torch
    import torch_diode
    from torch._inductor.async_compile import AsyncCompile
    from torch_diode.integration.install import installed_choices
    import triton.backends.nvidia.compiler as nvidia

    in_main_thread = []
    make_cubin = nvidia.CUDABackend.make_cubin

    def counted(self, src, metadata, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            in_main_thread.append(metadata.get("name"))
        return make_cubin(self, src, metadata, *args, **kwargs)

    nvidia.CUDABackend.make_cubin = counted
    # a warm-up compile first (Triton keys its kernel: the ptxas version is read), then the wait
    # for Inductor's worker pool
    a = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    torch.compile(lambda x, y: torch.relu(x @ y))(a, a)
    torch.cuda.synchronize()
    AsyncCompile.wait_pool_ready()
    if os.environ.get("LATE_INSTALL"):  # installed after that compile, as a user's own call would
        torch_diode.autoregister(force=True)
    choices = installed_choices()
    before = choices.get_stats()["unsure_benchmarked"] if choices is not None else 0
    del in_main_thread[:]
    q = torch.randn(384, 197, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(384, 197, 64, device="cuda", dtype=torch.float16)
    out = torch.compile(lambda q, k: torch.bmm(q, k.transpose(1, 2)))(q, k)
    torch.testing.assert_close(out, torch.bmm(q, k.transpose(1, 2)), rtol=2e-2, atol=2e-2)
    stats = choices.get_stats() if choices is not None else {"unsure_benchmarked": 0}
    print("RESULT " + json.dumps({
        "registered": choices is not None,
        "unsure_benchmarked": stats["unsure_benchmarked"] - before,
        "main_thread_cubin_compiles": len(in_main_thread),
        "main_thread_kernels": in_main_thread,
        "ptxas": os.environ.get("TRITON_PTXAS_PATH"),
    }))
""")


def run(**env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in ("TORCH_DIODE_NO_AUTOREGISTER", "TRITON_PTXAS_PATH")}
    environment.update(
        TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
        TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="diode_ptxas_triton_"),
        TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="diode_ptxas_inductor_"),
        TORCH_DIODE_UNSURE_HELDOUT_SLOWDOWN="1",
        **env,
    )
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def ptxas_version(path: str) -> str:
    return subprocess.run([path, "--version"], capture_output=True, text=True).stdout


def test_an_unsure_decisions_choices_are_not_compiled_again_in_the_compiling_process():
    bundled = os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas")
    if not os.access(bundled, os.X_OK):
        pytest.skip("this torch ships no ptxas: its workers and the compiling process use Triton's")
    aligned = run()
    assert aligned["registered"] and aligned["unsure_benchmarked"] == 1, aligned
    assert aligned["ptxas"] == bundled, aligned
    assert aligned["main_thread_cubin_compiles"] == 0, aligned
    # installed after the process keyed a kernel with Triton's ptxas: the same
    late = run(TORCH_DIODE_NO_AUTOREGISTER="1", LATE_INSTALL="1")
    assert late["registered"] and late["unsure_benchmarked"] == 1 and late["ptxas"] == bundled, late
    assert late["main_thread_cubin_compiles"] == 0, late
    # without it, where Triton's own ptxas differs from torch's, each Triton choice compiles again
    import triton.backends.nvidia as nvidia_backend

    own = os.path.join(os.path.dirname(nvidia_backend.__file__), "bin", "ptxas")
    if os.access(own, os.X_OK) and ptxas_version(own) != ptxas_version(bundled):
        apart = run(TORCH_DIODE_WORKER_PTXAS="0")
        assert apart["unsure_benchmarked"] == 1, apart  # (Inductor may have set the path itself: see hooks)
        assert apart["main_thread_cubin_compiles"] >= 2, apart
