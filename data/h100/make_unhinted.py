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
old collector wrote every chunk file of a draw when the draw started, so the chunk files of the
coverage parts that were resumed after the hints record a run from before them as well:
FIRST_HINTED gives, from the collection logs, the index in its part's draw from which a problem was
measured with the hints (v2-odd's first 101 problems were measured again with them; v2-layouts
325 -> 419 and v2-hidden 300 -> 357 in collection_v2p_h100.log, and everything after), and a
problem's index is its chunk's number times the chunk size (50) plus its place in the chunk's
`completed` list.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "h100" / "train"
OUT = ROOT / "data" / "h100" / "unhinted" / "h100_unhinted.msgpack.gz"
FIRST_HINTED = {"h100_v2_odd": 101, "h100_v2_layouts": 325, "h100_v2_hidden": 300}
CHUNK = re.compile(r"^(?P<part>.+)_chunk(?P<number>\d{4})\.msgpack\.gz$")
CHUNK_SIZE = 50


def _measured_with_hints(path: Path, dataset) -> set[str]:
    """The keys of the problems of a coverage part's chunk file measured with the hints."""
    match = CHUNK.match(path.name)
    first = FIRST_HINTED.get(match["part"]) if match else None
    if first is None:
        return set()
    start = int(match["number"]) * CHUNK_SIZE
    completed = dataset.metadata.get("completed", [])
    return {key for i, key in enumerate(completed) if start + i >= first}


def main() -> int:
    from torch_diode.collection.provenance import hinted_already
    from torch_diode.collection.kernel_spec import layout_hinted
    from torch_diode.dataset_tools import copy_problems
    from torch_diode.types import problem_key

    def unhinted(path: Path, dataset):
        if hinted_already(dataset):
            return None
        hinted_run = _measured_with_hints(path, dataset)
        return lambda problem: layout_hinted(problem) and problem_key(problem) not in hinted_run

    source = {
        "tool": "data/h100/make_unhinted.py",
        "settings": {"from": "data/h100/train"},
        "note": "copies of problems timed before the layout hints; not a collection",
    }
    out = copy_problems(sorted(TRAIN.glob("*.msgpack.gz")), unhinted, source, OUT)
    print(f"{out.num_problems} problems -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
