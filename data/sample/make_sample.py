"""Re-creates data/sample/h100_sample.json.gz: a small real dataset measured by stock
torch.compile max-autotune (ATEN,TRITON; DEFAULT search space) through torch_diode's recorder.

    python data/sample/make_sample.py OUTPUT.json.gz      # on a CUDA machine
"""

import json
import sys
from pathlib import Path

from torch_diode.collection.inductor_sweep import sweep_inductor
from torch_diode.types import Problem

SHAPES = Path(__file__).with_name("sample_problems.json")

if __name__ == "__main__":
    problems = [Problem(**p) for p in json.loads(SHAPES.read_text())]
    summary = sweep_inductor(problems, sys.argv[1], device="cuda", search_space="DEFAULT", backends="ATEN,TRITON")
    print(summary.line())
