"""Writes data/h200/unled/h200_unled.msgpack.gz: the problems of data/h200/train whose fastest
recorded time is under BELOW_US microseconds and whose file was timed without the fast collector's
lead before each flush (timing.LEAD_US), with those timings.

    python data/h200/make_unled.py

On the H200 those short kernels' timings read slow, Triton's more than cuBLAS's (docs/data.md,
"How kernels are timed"): `diode train --exclude data/h200/unled` leaves them out until
`collect.sh remeasure-lead` has measured them again, and `--prior-data` then takes the H100's
timings of those it holds. A file counts as timed with the lead by the rule `diode remeasure
--without-lead --below-us BELOW_US` reads (collection.provenance.led_already), and its problems under the
bound by the one it selects them by (collection.remeasure.ran_under).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "h200" / "train"
OUT = ROOT / "data" / "h200" / "unled" / "h200_unled.msgpack.gz"
BELOW_US = 30.0  # collect.sh remeasure-lead's LEAD_BELOW_US


def main() -> int:
    from torch_diode.collection.provenance import led_already
    from torch_diode.collection.remeasure import ran_under
    from torch_diode.dataset_tools import copy_problems
    from torch_diode.types import problem_key

    def unled(path: Path, dataset):
        if led_already(dataset, BELOW_US):
            return None
        short = ran_under(dataset, BELOW_US)
        return lambda problem: problem_key(problem) in short

    source = {
        "tool": "data/h200/make_unled.py",
        "settings": {"from": "data/h200/train", "below_us": BELOW_US},
        "note": "copies of problems timed without the collector's lead; not a collection",
    }
    out = copy_problems(sorted(TRAIN.glob("*.msgpack.gz")), unled, source, OUT)
    print(f"{out.num_problems} problems -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
