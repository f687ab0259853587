"""The tests are not a package: their shared helper modules (tests/integration/broken_models.py,
fx_cache_child.py; tests/gpu/gpu_models.py) are imported by name from every test directory."""

import sys
from pathlib import Path

for helpers in ("integration", "gpu"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / helpers))
