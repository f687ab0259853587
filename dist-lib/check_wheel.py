"""Checks a torch-diode-lib wheel: no shipped model, no torch_diode_models, the library-only
marker; installed into a new virtual environment (seeing the torch of the interpreter that runs
this check, through a ``.pth`` file naming its site-packages), ``import torch_diode`` registers
nothing and adds nothing to Inductor's config.

    python dist-lib/check_wheel.py WHEEL
"""

from __future__ import annotations

import site
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

IMPORT_CHECK = """
import sys
import torch
from torch._inductor import config
before = dict(config.get_config_copy())
import torch_diode
assert torch_diode.__file__.startswith(sys.prefix), f"imported {torch_diode.__file__}, not the wheel's"
from torch_diode.integration.install import installed_choices
assert dict(config.get_config_copy()) == before, "the import changed Inductor's config"
assert not hasattr(config, "fast_autotune"), "the import added diode's settings"
assert installed_choices() is None and torch_diode.autoregister() is None, "the import registered a model"
assert torch_diode.list_available_models() == [], torch_diode.list_available_models()
torch_diode.enable_inductor_settings()  # on request, the settings are there
assert config.fast_autotune is None
import torch_diode._C
print("torch-diode-lib: import registers nothing")
"""


def main(wheel: str) -> int:
    names = zipfile.ZipFile(wheel).namelist()
    models = [n for n in names if n.endswith(".diode")]
    problems = [f"holds a model: {m}" for m in models]
    if any(n.startswith("torch_diode_models/") for n in names):
        problems.append("holds torch_diode_models")
    if "torch_diode/_library_only.py" not in names:
        problems.append("lacks torch_diode/_library_only.py")
    if not any(n.startswith("torch_diode/_C") for n in names):
        problems.append("lacks the C++ extension torch_diode/_C")
    if problems:
        print(f"{wheel}: " + "; ".join(problems), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as venv:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
        python = str(Path(venv) / "bin" / "python")
        # torch may live in this interpreter's own virtual environment (make's .venv), which a
        # new venv's --system-site-packages does not reach; the new venv's site-packages, with
        # the wheel, stays first on sys.path
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        Path(purelib, "_outer_site.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", wheel], check=True)
        # run outside the clone, so that the installed wheel is imported, not ../src
        subprocess.run([python, "-c", textwrap.dedent(IMPORT_CHECK)], check=True, cwd=venv)
    print(f"{wheel}: {len(names)} files, no model, library-only marker present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
