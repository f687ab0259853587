"""The tests are not a package: their shared helper modules (tests/integration/broken_models.py,
fx_cache_child.py; tests/gpu/gpu_models.py; tests/selection/selection_policies.py) are imported by
name from every test directory."""

import os
import sys
from pathlib import Path

import pytest

for helpers in ("integration", "gpu", "selection"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / helpers))

# Inductor's C++ builds (the CPU GEMM template's kernels, the CPU ISA checks) without optimisation,
# in the test processes and every process they start: the tests judge what diode does, not how
# fast CPU kernels run, and -O3 builds of the GEMM template are most of a CPU collection's time.
# GPU kernels (Triton) are compiled as always.
os.environ.setdefault("TORCHINDUCTOR_DEBUG_COMPILE", "1")
# Inductor's check of the CPU's vector ISAs (a C++ build per ISA, then a new Python process that
# loads it, in every process that compiles for the CPU) answered by the CPU's flags alone: Inductor's
# own setting for it (config.cpp.vec_isa_ok). The kernels still build with the ISA the CPU names.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")
# One OpenMP thread per torch process, in the test processes and every process they start (the
# command line, workflows, Inductor's compiled CPU kernels): the pytest-xdist workers are the
# parallelism, one more than the cores. Several threads per process on busy cores spend their time
# synchronising (a training step of a few hundred rows took 8x longer), not computing.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def _environment_as_found():
    """Each test leaves the environment as it found it: importing a script that sets a variable
    at import (benchmarks/e2e.py sets TORCH_DIODE_NO_AUTOREGISTER) would otherwise reach every
    process that later tests of the same worker start, whichever tests those are."""
    before = dict(os.environ)
    yield
    if dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)


def pytest_collection_modifyitems(config, items):
    """The slow tests first (a stable sort keeps each group's order): the short ones come last in
    the queue, which pytest-xdist's idle workers steal from the end of, so the workers finish
    close together."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def run_main(capsys):
    """A command's ``main(argv)`` run in this process (no interpreter and torch to start): a callable
    ``run(main, *argv)`` returning (exit code, stdout, stderr) as a process of its own ends: a
    SystemExit's code (None: 0; a message, as ``raise SystemExit("...")`` gives: printed to stderr,
    exit code 1), and its stderr holding what the command logs (INFO and up, DEBUG with -v or
    --verbose, as diode's main configures logging)."""
    import logging

    def run(main, *argv) -> tuple[int, str, str]:
        words = [str(a) for a in argv]
        root = logging.getLogger()
        handler = logging.StreamHandler(sys.stderr)  # the stream capsys captures now
        handler.setFormatter(logging.Formatter("[%(levelname)s] %(name)s: %(message)s"))
        level = root.level
        root.addHandler(handler)
        root.setLevel(logging.DEBUG if {"-v", "--verbose"} & set(words) else logging.INFO)
        try:
            code = main(words)
        except SystemExit as e:  # argparse's usage errors, a script's `raise SystemExit(message)`
            code = e.code
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
        out, err = capsys.readouterr()
        return code or 0, out, err

    return run


@pytest.fixture
def diode_cli(run_main):
    """``diode ARGV...`` in this process (:func:`run_main` of torch_diode.cli.main): a callable
    returning (exit code, stdout, stderr). A command that measures compiles in this process, as the
    tests' own torch.compile calls do; a test about a process of its own (kill -9, Ctrl-C, what an
    import does, a command as a document writes it) starts one."""
    from torch_diode.cli import main

    return lambda *argv: run_main(main, *argv)
