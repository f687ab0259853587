"""The handler's selection judged on measured data (CPU): first pick and unsure widening.

For every problem of each dataset and each model, the candidates are ordered as diode's Inductor
handler orders them (:mod:`torch_diode.selection`: configs exceeding shared memory left out, ATen
preferred within extern_preference), then:

  first      measured time of the first pick / best measured time
  widened    best measured time among what an unsure decision hands Inductor's benchmark (the
             first pick and the best predicted among ATen and Inductor's DEFAULT Triton configs,
             unsure_top_k in all) / best measured time
  kept       how many candidates that is

Geometric means and worst cases per dataset are printed last and written to --out.

    python benchmarks/heldout_selection.py --out sel.json     # the shipped model on the H100 sets
    python benchmarks/heldout_selection.py --model NVIDIA-H100-matmul other.diode --data DIR ... --out sel.json
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from torch_diode import config
from torch_diode.features import config_rows, featurize
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.selection import beyond_default_list, selection_order, usable_candidates, widen
from torch_diode.types import load_datasets


ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = [str(ROOT / "data" / "h100" / "validation" / f"h100_{part}.msgpack.gz")
                for part in ("mm_chunk0000", "mm_chunk0001", "bmm_chunk0000", "f32_chunk0000", "odd_chunk0000")] \
    + [str(ROOT / "data" / "h100" / "odd"), str(ROOT / "data" / "h100" / "odd2")]


def judge(model: str, data: str, top_k: int, preference: float) -> dict:
    engine = load_model(model)
    first, best_widened, kept = [], [], []
    for hardware, problem, timings in load_datasets([data]).problems():
        ok = [t for t in timings if not t.failed]
        configs = [t.config for t in ok]
        measured = np.array([t.time_us for t in ok])
        predicted = predict_log_time_us(engine, problem, configs, hardware).astype(np.float64)
        usable = usable_candidates(featurize(problem, configs, hardware))
        if len(usable) == 0:
            continue
        order = selection_order(predicted, np.array([not c.is_tiled for c in configs]), preference, usable)
        wide = widen(order, top_k, ~beyond_default_list(problem, config_rows(configs)))
        best = measured[usable].min()
        first.append(measured[order[0]] / best)
        best_widened.append(measured[wide].min() / best)
        kept.append(len(wide))

    def summary(x: list[float]) -> dict:
        return {"geomean": float(math.exp(np.mean(np.log(x)))), "worst": float(max(x)), "over_1.3": int(sum(v > 1.3 for v in x))}

    return {"model": model, "data": data, "problems": len(first), "first": summary(first),
            "widened": summary(best_widened), "kept_mean": float(np.mean(kept))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", nargs="+", default=["NVIDIA-H100-matmul"], help="model files or shipped model names")
    parser.add_argument("--data", nargs="+", default=DEFAULT_DATA,
                        help="dataset files or folders, each judged on its own (default: the H100 validation files, data/h100/odd, data/h100/odd2)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    settings = {"unsure_top_k": config.unsure_top_k, "unsure_pool": "ATen and Inductor's DEFAULT Triton configs",
                "extern_preference": config.extern_preference}
    rows = [judge(m, d, config.unsure_top_k, config.extern_preference)
            for m in args.model for d in args.data]
    report = {"command": "python benchmarks/heldout_selection.py", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": "CPU (predictions against data measured on the GPU named in each dataset)",
              "settings": settings, "rows": rows}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{'model':28s} {'data':52s} {'n':>4s} {'first gm':>9s} {'worst':>6s} {'wide gm':>8s} {'worst':>6s} {'kept':>5s}")
    for r in rows:
        print(f"{r['model'][-28:]:28s} {r['data'][-52:]:52s} {r['problems']:4d} {r['first']['geomean']:9.3f} "
              f"{r['first']['worst']:6.2f} {r['widened']['geomean']:8.3f} {r['widened']['worst']:6.2f} {r['kept_mean']:5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
