"""Writes data/h100/unhinted/h100_unhinted.msgpack.gz: the problems of data/h100/train whose
kernels get layout hints (collection.kernel_spec.layout_hinted) but whose Triton timings were
measured before the collector gave its kernels those hints, with those timings.

    python data/h100/make_unhinted.py

Their Triton configs were timed with narrower memory accesses than Inductor's kernels make, the same
kernels that the rest of the data times with the hints: `diode train --exclude data/h100/unhinted`
leaves them out until `collect.sh remeasure-hinted` has measured them again
(benchmarks/results/model_choice_cpu.txt compares training with and without them).

A file counts as measured with the hints where every collection it records ran with them or a
hinted re-measurement was merged into it (the rule `diode remeasure --layout-hinted` reads). The
old collector wrote every chunk file of a draw when the draw started, so some chunk files record a
run from before the hints that measured none of their hinted problems: HINTED_CHUNKS lists those,
from the collection logs (benchmarks/results/collection_v2*_h100.log) and data/README.md (the last
216 problems of v2-odd, 94 of v2-layouts and 57 of v2-hidden were measured with the hints; the 3
problems of v2-layouts' chunk 8 measured before them get no hints).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "h100" / "train"
OUT = ROOT / "data" / "h100" / "unhinted" / "h100_unhinted.msgpack.gz"
HINTED_CHUNKS = re.compile(r"h100_v2_odd_chunk000[3-8]|h100_v2_layouts_chunk000[89]|h100_v2_hidden_chunk000[67]")


def main() -> int:
    from torch_diode.cli.collect import _hinted_already
    from torch_diode.collection.kernel_spec import layout_hinted
    from torch_diode.types import Dataset, load_dataset, save_dataset

    out = Dataset()
    files = []
    for path in sorted(TRAIN.glob("*.msgpack.gz")):
        dataset = load_dataset(path)
        if _hinted_already(dataset) or HINTED_CHUNKS.search(path.name):
            continue
        before = out.num_problems
        for hardware, problem, timings in dataset.problems():
            if layout_hinted(problem):
                out.add(hardware, problem, timings)
        if out.num_problems > before:
            files.append(path.name)
    out.metadata["sources"] = [
        {
            "tool": "data/h100/make_unhinted.py",
            "settings": {"from": "data/h100/train", "files": files},
            "note": "copies of problems timed before the layout hints; not a collection",
        }
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    save_dataset(out, OUT)
    print(f"{out.num_problems} problems of {len(files)} files -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
