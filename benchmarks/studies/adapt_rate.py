"""Which learning rate, and which layers, adapt another GPU's model to 100 problems of a new one? (CPU)

benchmarks.adapt_curve's adaptation (``ADAPT``) at each ``--learning-rates`` value and each
``--trainable-layers`` value (``diode train --trainable-layers``; 0: every layer), both ways
between the H100 and the H200, every ``--seeds`` seed, judged as the handler decides on the new
GPU's validation data (chosen on) and on its held-out real models' data (checked on): first pick
over the best measured (geomean, worst) and the unsure fraction. Each direction starts from a model
of the source GPU's data alone (benchmarks.adapt_curve's ``--source-model``, which says how to
train the H200's).

    python -m benchmarks.studies.adapt_rate --source-model h200=h200_alone.diode \
        --out benchmarks/results/adapt_rate_cpu.json
    python -m benchmarks.studies.adapt_rate --source-model h100=h100_alone.diode h200=h200_alone.diode \
        --learning-rates 1e-4 --trainable-layers 0 1 --out benchmarks/results/adapt_layers_cpu.json
    python -m benchmarks.studies.adapt_rate --source-model h100=h100_alone.diode h200=h200_alone.diode \
        --learning-rates 1e-3 --trainable-layers 1 --out benchmarks/results/adapt_layers_rate_cpu.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path

from benchmarks import adapt_curve
from torch_diode.dataset_io import merge_all

KEYS = ("first_pick_geomean", "first_pick_worst", "unsure_fraction")


def rates(
    source: str,
    new: str,
    learning_rates: list[float],
    seeds: list[int],
    n: int,
    model: str | None = None,
    layers: tuple[int, ...] = (0,),
) -> list[dict]:
    model = adapt_curve.source_model(source, new, model)
    source_files = adapt_curve.gpu_files(source)
    source_data, new_data = merge_all(source_files), merge_all(adapt_curve.gpu_files(new))
    pool = adapt_curve.sample_pool(source_files, new_data)
    rows = []
    for rate, trainable in itertools.product(learning_rates, layers):
        adapt = {**adapt_curve.ADAPT, "learning_rate": rate, "trainable_layers": trainable or None}
        with tempfile.TemporaryDirectory(prefix="adapt_rate_") as tmp:
            for seed in seeds:
                path, _ = adapt_curve.adapted(model, source_data, new_data, pool, n, seed, Path(tmp), adapt)
                row = {"source": source, "new": new, "learning_rate": rate, "trainable_layers": trainable, "seed": seed}
                for data in ("validation", "realmodels"):
                    row[data] = adapt_curve.judged(str(path), new, data, KEYS)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[3e-4, 1e-4])
    parser.add_argument(
        "--trainable-layers", type=int, nargs="+", default=[0], help="last layers fitted (0: every layer)"
    )
    parser.add_argument("--problems", type=int, default=100, help="sample size")
    adapt_curve.add_study_options(parser)
    args = parser.parse_args()

    def run(source: str, new: str, model: str | None) -> list[dict]:
        return rates(source, new, args.learning_rates, args.seeds, args.problems, model, tuple(args.trainable_layers))

    rows = adapt_curve.both_ways(args, run)
    adapt = {**adapt_curve.ADAPT, "learning_rate": args.learning_rates, "trainable_layers": args.trainable_layers}
    adapt_curve.write_study(args.out, rows, adapt=adapt, problems=args.problems)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
