"""The README's torch.compile example on a GPU, as written, in a fresh process (its import
registers the shipped model). On a GPU with a shipped model (H100, H200) diode must decide the
GEMM; on another GPU it compiles with stock behaviour."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from gpu_models import exact_shipped_model

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("readme_blocks", ROOT / "tests" / "readme_blocks.py")
readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme)

STATS = """
import json
from torch_diode.integration.install import installed_choices
_c = installed_choices()
print("STATS " + json.dumps(_c.get_stats() if _c is not None else None, default=str))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_readme_gpu_example_lets_the_shipped_model_decide():
    (code,) = [b for b in readme.blocks("python", "Use it with torch.compile") if 'device="cuda"' in b]
    env = {**os.environ, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}
    env.pop("TORCH_DIODE_NO_AUTOREGISTER", None)
    proc = subprocess.run([sys.executable, "-c", code + STATS], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    stats = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("STATS "))[len("STATS ") :])
    if exact_shipped_model() is None:  # no model, or a family member's (every decision unsure)
        return
    assert stats is not None, f"the import registered no model on {torch.cuda.get_device_name()}"
    assert stats["fallbacks_total"] == 0, stats["fallbacks"]
    assert stats["model_selections"] >= 1, stats
