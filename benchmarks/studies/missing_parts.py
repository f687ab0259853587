"""Do data parts matter to a model's held-out first picks? (CPU, replays)

Four parts of the H200's data (data/README.md): ``v2-odd1b``, ``v2-attn-qk4b``, ``v2-attn-pv4b`` and
the fp32 attention parts at any token count. Two models of the H200's data alone, one with those
parts and one without, same recipe and seed, are judged as the handler decides
(benchmarks.selection_replay realmodels) on the H200's and the H100's held-out real models: first
pick over the best measured (geomean, worst), outcome and unsure fraction.

The models, trained from the repository root (about 25 minutes each on one CPU core)::

    RECIPE="--exclude data/h200/unled --hardware-name 'NVIDIA H200' --model-type base --hidden-dim 48
        --ensemble 4 --num-epochs 300 --patience 30 --batch-size 512 --seed 0 --loss listwise"
    eval diode train --data-dir data/h200/train $RECIPE --model with.diode
    mkdir without && for f in data/h200/train/*; do case $f in
        *v2_attn_pv4b*|*v2_attn_qk4b*|*v2_odd1b*|*f32_attn_*_odd*) ;; *) ln -s "$PWD/$f" without/ ;; esac; done
    eval diode train --data-dir without $RECIPE --model without.diode
    python -m benchmarks.studies.missing_parts --with with.diode --without without.diode \\
        --out benchmarks/results/missing_parts_cpu.json

The same question for a part of one GPU's data alone: the H100's ``v2-attn-decode-pv-long``, with
the shipped H100 model's recipe (``diode rebuild-model --current-data``) at three seeds, each
trained on a folder of links to the files of ``data/h100/train`` and ``data/h100/decode_pv_long``
and on ``data/h100/train`` alone, judged on the H100's held-out real models (``--with`` and
``--without`` models paired by seed)::

    python -m benchmarks.studies.missing_parts --heldout h100 --with with_s1.diode with_s2.diode \\
        with_s3.diode --without without_s1.diode without_s2.diode without_s3.diode \\
        --out benchmarks/results/decode_pv_long_part_h100_cpu.json
"""

from __future__ import annotations

import argparse

from benchmarks.common import cpu_report_header, write_json
from benchmarks.selection_replay import judge_realmodels

KEYS = ("num_problems", "first_pick_geomean", "first_pick_worst", "outcome_worst", "unsure_fraction")


def judged(model: str, gpu: str) -> dict:
    """:data:`KEYS` of the handler's replay of ``model`` on the GPU's held-out real models, and the
    problem of the worst first pick."""
    summary, picks = judge_realmodels(model, [f"data/{gpu}/realmodels"], "realmodels_heldout")
    worst = max(picks, key=lambda r: r["first_pick"])
    return {**{k: summary[k] for k in KEYS}, "first_pick_worst_problem": worst["problem"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--with", dest="with_parts", nargs="+", required=True, help="models trained with the parts")
    parser.add_argument("--without", dest="without_parts", nargs="+", required=True, help="models trained without")
    parser.add_argument(
        "--heldout", nargs="+", choices=("h200", "h100"), default=["h200", "h100"], help="whose held-out models judge"
    )
    parser.add_argument("--out", required=True, help="JSON report")
    args = parser.parse_args()
    if len(args.with_parts) != len(args.without_parts):
        parser.error("--with and --without: give as many models each (paired by seed)")
    rows = []
    for parts, models in (("with", args.with_parts), ("without", args.without_parts)):
        for model in models:
            for gpu in args.heldout:
                rows.append({"parts": parts, "model": model, "heldout": gpu, **judged(model, gpu)})
    report = cpu_report_header(f"CPU (models judged on the held-out data of {', '.join(args.heldout)})")
    report.update(rows=rows)
    write_json(args.out, report)
    print(f"{'parts':8s} {'held-out':8s} {'first gm':>9s} {'worst':>7s} {'outcome':>8s} {'unsure':>7s}  model")
    for r in rows:
        print(
            f"{r['parts']:8s} {r['heldout']:8s} {r['first_pick_geomean']:9.4f} {r['first_pick_worst']:7.3f} "
            f"{r['outcome_worst']:8.3f} {r['unsure_fraction']:7.3f}  {r['model']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
