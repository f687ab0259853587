"""The package's layering, read from its import statements (ast, every import in a module, those
inside functions included): no import circle, nothing imports the package's __init__ (the top),
the runtime imports no offline tool, collection/ and integration/ never import each other,
selection/ imports no torch._inductor, one implementation of the first pick, and modules and
functions of a readable size."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "torch_diode"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The modules ``path`` imports, absolute. ``from . import x`` imports the module package.x where
    x is one, else a name of the package (``from .. import __version__`` imports the package's
    __init__, as ``from . import _C`` does: the extension is no module of the source tree)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            out.update(submodules)
            if len(submodules) < len(node.names):
                out.add(base)
    return out


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def graph() -> dict[str, set[str]]:
    """torch_diode's modules -> the torch_diode modules they import (a package stands for its __init__)."""
    return {name: {m for m in imports_of(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def test_the_walk_sees_relative_and_function_level_imports():
    edges = graph()
    assert "torch_diode.inductor.convert" in edges["torch_diode.collection.recorder"]
    assert "torch_diode.integration.choices" in edges["torch_diode.integration.install"]  # inside a function


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Import circles (a package's __init__ importing its own submodules is how packages work, not a circle)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    found = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                if not all(b.startswith(a + ".") or a.startswith(b + ".") for a, b in zip(cycle, cycle[1:])):
                    found.append(cycle)
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name, [name])
    return found


def test_no_import_circle():
    assert circles(graph()) == []  # the CLI's cli.py and model_cli.py imported each other before cli/


def test_nothing_imports_the_package_root():
    """torch_diode/__init__.py is the top of the layering (it installs the handler): a module that
    needs the version, a setting or the C++ core imports that module (``from ..version import
    __version__``, ``from .. import config``, ``from ._C import Model``), never the package."""
    assert (
        sorted(name for name, path in MODULES.items() if name != "torch_diode" and "torch_diode" in imports_of(path))
        == []
    )


# the offline tools: what measures, trains and evaluates, and the command line over them
OFFLINE = ("torch_diode.collection", "torch_diode.training", "torch_diode.evaluation", "torch_diode.cli")


def test_the_runtime_imports_no_offline_tool():
    """The runtime (the data model, features, the Inductor boundary, selection, integration, the
    registry and model files) imports nothing of the offline tools (``import torch_diode`` loads
    none of them: tests/test_import.py); the package's __init__ names the collection's
    ``Collector`` and ``collect`` for import on first use."""
    bad = sorted(
        (name, m)
        for name, path in MODULES.items()
        if not name.startswith(OFFLINE)
        for m in imports_of(path)
        if m.startswith(OFFLINE)
    )
    assert bad == []


@pytest.mark.parametrize(
    "source, target",
    [
        ("collection", "integration"),
        ("integration", "collection"),
        ("selection", "integration"),
        ("selection", "collection"),
        ("inductor", "integration"),
        ("inductor", "collection"),
        ("integration", "training"),
    ],
)
def test_layers_do_not_import_each_other(source, target):
    bad = sorted(
        (name, m)
        for name, path in MODULES.items()
        if name.startswith(f"torch_diode.{source}")
        for m in imports_of(path)
        if m.startswith(f"torch_diode.{target}")
    )
    assert bad == []


def test_selection_imports_no_inductor_and_no_compile():
    for name, path in MODULES.items():
        if name.startswith("torch_diode.selection"):
            imported = imports_of(path)
            assert not any(
                m.startswith(("torch._inductor", "torch._dynamo", "torch_diode.inductor")) for m in imported
            ), name
            assert not any(m == "torch" or m.startswith("torch.") for m in imported), name


def test_one_implementation_of_the_first_pick():
    """The first pick is selection.decide's: the handler, training's held-out report,
    validate-max-autotune and the benchmarks that replay the handler call decide, and nothing
    outside selection/ orders candidates itself."""
    callers = [
        PACKAGE / "integration" / "choices.py",
        PACKAGE / "training" / "confidence.py",
        PACKAGE / "evaluation.py",
        ROOT / "benchmarks" / "selection_replay.py",
    ]
    for path in callers:
        tree = ast.parse(path.read_text())
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert "decide" in called, path
    for path in [*PACKAGE.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]:
        if path.parent == PACKAGE / "selection":
            continue
        text = path.read_text()
        for rule in ("selection_order(", "usable_candidates(", "widen(", "SPILL_LOG2_REGS", 'smem_exceeds")'):
            assert rule not in text, (path, rule)


# Inductor's public surface that code outside inductor/ may use: the choices base class (the hook
# subclasses it) and the config module's patch() (a collection run's settings).
PUBLIC_INDUCTOR = {
    "torch._inductor",
    "torch._inductor.choices",
    "torch._inductor.choices.InductorChoices",
    "torch._inductor.config",
}


def test_only_inductor_touches_inductor_internals():
    """inductor/ alone reaches into torch._inductor; elsewhere only the InductorChoices base class and
    the config module."""
    for name, path in MODULES.items():
        if name.startswith("torch_diode.inductor"):
            continue
        internals = {m for m in imports_of(path) if m.startswith("torch._inductor")} - PUBLIC_INDUCTOR
        assert not internals, f"{name} imports {sorted(internals)}"


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _triton_kernel(node: ast.FunctionDef) -> bool:
    """A Triton kernel's source (``tl.constexpr`` parameters; jitted as it is or by
    ``triton.jit(...)(fn)``): one kernel is one function, however long."""
    return any(a.annotation is not None and ast.unparse(a.annotation) == "tl.constexpr" for a in node.args.args)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_modules_are_of_a_readable_size():
    assert {name: n for name, path in MODULES.items() if (n := _lines(path)) > MAX_MODULE_LINES} == {}


def test_functions_are_of_a_readable_size():
    long_functions = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _triton_kernel(node):
                if (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    long_functions[f"{name}.{node.name}"] = n
    assert long_functions == {}


def test_the_size_checks_see_a_long_function_and_a_triton_kernel():
    (kernel,) = (
        n
        for n in ast.walk(ast.parse((PACKAGE / "collection" / "triton_mm.py").read_text()))
        if isinstance(n, ast.FunctionDef) and n.name == "_mm_body"
    )
    assert _triton_kernel(kernel) and kernel.end_lineno - kernel.lineno + 1 > MAX_FUNCTION_LINES
