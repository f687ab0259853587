"""(CPU) A new GPU from a sample: how good is another GPU's model adapted to N problems of it?

Both ways between the GPUs whose data the repository holds (H100 -> H200 and H200 -> H100): the
source GPU's shipped model is adapted (``diode train --init-model SOURCE --prior-data SOURCE_DATA
--prior-share --trainable-layers``, :data:`ADAPT`) to the ``diode sample`` of N problems of the
source GPU's data, with the times the new GPU measured for them (the sample is drawn among the
problems both GPUs measured, so that every sampled problem has the new GPU's times; a real new GPU
measures the printed ``diode collect-shapeset`` command's). Each adapted model is judged as the
handler decides, with its own confidence contract, on the new GPU's held-out real models' data
(benchmarks.selection_replay realmodels): first pick over the best measured (geomean, worst), the
unsure fraction and the Triton top-1. N = 0 is the source model as it is; "all" is the new GPU's
shipped model, trained on all its data. The sample of N problems is (nearly) the same for every
seed, since ``design`` breaks only ties by the seed: the seeds vary the adaptation's training, which
can move the worst first pick on its own.

A source model must not have seen the new GPU's measurements: a shipped model trained with the
other GPU's data as ``--prior-data`` or adapted from its model (both shipped models are) is
refused, and ``--source-model GPU=FILE`` gives one trained on the source GPU's data alone::

    RECIPE="--model-type base --hidden-dim 48 --ensemble 4 --num-epochs 300 --patience 30 --batch-size 512
        --loss listwise"
    diode train --data-dir data/h200/train --exclude data/h200/unled --hardware-name "NVIDIA H200" \
        $RECIPE --seed 0 --model h200_alone.diode
    diode train --data-dir data/h100/train --exclude data/h100/unhinted $RECIPE --seed 1 --model h100_alone.diode
    python -m benchmarks.adapt_curve --source-model h100=h100_alone.diode h200=h200_alone.diode \
        --out benchmarks/results/adapt_curve_cpu.json
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import cpu_report_header, write_json
from benchmarks.selection_replay import judge_realmodels
from torch_diode.collection.design import candidates, design
from torch_diode.collection.shapes import excluded_measurements
from torch_diode.dataset_io import load_each, merge_all
from torch_diode.model_file import write_model
from torch_diode.registry import resolve_model
from torch_diode.training.recipe import load_recipe, recipe_path
from torch_diode.training.train import TrainConfig, train_model, with_prior_data
from torch_diode.types import problem_key

logger = logging.getLogger(__name__)

GPUS = {"h100": "NVIDIA-H100-matmul", "h200": "NVIDIA-H200-matmul"}
DEVICES = {"h100": "H100", "h200": "H200"}  # in the device names the data records
# `diode train --init-model SOURCE --prior-share 0.5 --num-epochs 40 --learning-rate 1e-4
# --patience 15 --loss listwise --trainable-layers 1`: the adaptation docs/contributing.md gives
ADAPT = {
    "prior_share": 0.5,
    "num_epochs": 40,
    "learning_rate": 1e-4,
    "patience": 15,
    "loss": "listwise",
    "trainable_layers": 1,
}
SIZES = (25, 50, 100, 200, 500)
SUMMARY_KEYS = (
    "first_pick_geomean",
    "first_pick_worst",
    "unsure_fraction",
    "outcome_worst",  # the handler's result: the best of what an unsure decision benchmarks
    "triton_top1_perf_geomean",
)


def gpu_files(gpu: str) -> list:
    """The GPU's training data, file by file (`diode sample` reads a file's settings), less what
    its shipped model's recipe excludes (`diode train --exclude`'s rule): measurements known wrong
    until measured again."""
    recipe = load_recipe(recipe_path(resolve_model(GPUS[gpu])))
    excluded = excluded_measurements(recipe.paths(("exclude",)))
    return [d.subset(lambda hw, p: not excluded(hw, p)) for d in load_each([f"data/{gpu}/train"])]


def sample_pool(source_files, new_data) -> list:
    """The problems a sample is drawn from: the source GPU's candidates (of its data file by file)
    the new GPU measured too."""
    have = {problem_key(p) for _, p, _ in new_data.problems()}
    return [c for c in candidates(source_files) if problem_key(c.problem) in have]


def source_model(gpu: str, new: str, given: str | None = None) -> str:
    """The model a curve from ``gpu`` starts from: ``given``, else the shipped one; SystemExit
    where it trained on ``new``'s measurements (its prior data) or was adapted from another model
    (which may have)."""
    from torch_diode.model_file import read_model

    model = given or GPUS[gpu]
    metadata = read_model(resolve_model(model)).metadata
    prior = metadata.get("training_data", {}).get("prior_data") or {}
    seen = [name for name in prior.get("device_names", []) if DEVICES[new] in name]
    start = metadata.get("training", {}).get("init_model")
    if seen:
        why = f"trained on {prior.get('problems')} problems measured on {seen[0]} (its --prior-data)"
    elif start:
        why = f"was adapted from {start} (its --init-model)"
    else:
        return model
    raise SystemExit(f"--source-model: {model} {why}: give {gpu}=FILE, a model of the {gpu.upper()}'s data alone")


def add_source_model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source-model",
        nargs="+",
        default=[],
        metavar="GPU=FILE",
        help="the model a direction from GPU starts from (default: the shipped one, refused where it saw the new GPU)",
    )


def add_study_options(parser: argparse.ArgumentParser) -> None:
    """``--seeds``, ``--source-model`` and ``--out``: the options the adaptation studies share."""
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    add_source_model_option(parser)
    parser.add_argument("--out", required=True, help="JSON report")


def both_ways(args: argparse.Namespace, run: Callable[[str, str, str | None], list[dict]]) -> list[dict]:
    """The rows of ``run(source, new, the --source-model given for source or None)``, H100 -> H200
    then H200 -> H100."""
    logging.basicConfig(level=logging.ERROR)
    given = source_models(args.source_model)
    return [row for source, new in (("h100", "h200"), ("h200", "h100")) for row in run(source, new, given.get(source))]


def write_study(path: str, rows: list[dict], **fields) -> None:
    """An adaptation study's report: the CPU header, ``fields`` and the rows."""
    report = cpu_report_header("CPU (adapted models judged on data measured on the new GPU)")
    report.update(**fields, rows=rows)
    write_json(path, report)


def source_models(words: list[str]) -> dict[str, str]:
    """``--source-model``'s GPU=FILE words as {GPU: FILE}; SystemExit naming the option otherwise."""
    given = dict(word.split("=", 1) for word in words if "=" in word)
    if len(given) != len(words) or not set(given) <= set(GPUS):
        raise SystemExit(f"--source-model: expected GPU=FILE with GPU one of {', '.join(GPUS)}, got {' '.join(words)}")
    return given


def adapted(
    source: str, source_data, new_data, pool: list, n: int, seed: int, folder: Path, adapt: dict | None = None
) -> tuple[Path, float]:
    """The source model (a name or file) adapted (``adapt``: the training settings, :data:`ADAPT`
    where None) to the sample of ``n`` problems of ``pool``; (its file, training seconds)."""
    keys = {problem_key(c.problem) for c in design(pool, n, seed)}
    sample = new_data.subset(lambda hw, p: problem_key(p) in keys)
    data, prior, prior_keys = with_prior_data(sample, source_data)
    start = time.perf_counter()
    config = TrainConfig(init_model=source, seed=seed, **(ADAPT if adapt is None else adapt))
    model, _ = train_model(data, config, progress=False, prior_data=prior, prior_problems=prior_keys)
    path = folder / f"{Path(source).stem}_{n}_{seed}.diode"
    write_model(path, model)
    return path, time.perf_counter() - start


def judged(model: str, gpu: str, data: str = "realmodels", keys: tuple[str, ...] = SUMMARY_KEYS) -> dict:
    """``keys`` of the handler's replay (benchmarks.selection_replay realmodels) of ``model`` on
    ``data/GPU/DATA`` (the held-out real models, or another folder of the GPU's)."""
    summary, _ = judge_realmodels(model, [f"data/{gpu}/{data}"], "realmodels_heldout")
    return {k: summary[k] for k in keys}


def curve(
    source: str, new: str, sizes: list[int], seeds: list[int], all_seeds_at: int, model: str | None = None
) -> list[dict]:
    """The rows of one direction: the source model (``model``, else the shipped one:
    :func:`source_model`) as it is, adapted to each sample size (every seed at ``all_seeds_at``
    problems, the first seed at the other sizes), the new GPU's own model."""
    model = source_model(source, new, model)
    source_files = gpu_files(source)
    source_data, new_data = merge_all(source_files), merge_all(gpu_files(new))
    pool = sample_pool(source_files, new_data)
    rows = [{"source": source, "new": new, "problems": 0, "seed": None, "source_model": model, **judged(model, new)}]
    with tempfile.TemporaryDirectory(prefix="adapt_curve_") as tmp:
        for n in sizes:
            for seed in seeds if n == all_seeds_at else seeds[:1]:
                path, train_s = adapted(model, source_data, new_data, pool, n, seed, Path(tmp))
                row = {"source": source, "new": new, "problems": n, "seed": seed, "train_s": round(train_s, 1)}
                rows.append({**row, **judged(str(path), new)})
                logger.warning("%s", rows[-1])
    rows.append({"source": source, "new": new, "problems": "all", "seed": None, **judged(GPUS[new], new)})
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for (source, new), marker in zip((("h100", "h200"), ("h200", "h100")), ("o", "s")):
        mine = [r for r in rows if r["source"] == source and isinstance(r["problems"], int) and r["problems"]]
        full = next((r for r in rows if r["source"] == source and r["problems"] == "all"), None)
        if full is None:
            continue
        for ax, key in zip(axes, ("first_pick_geomean", "first_pick_worst", "unsure_fraction")):
            line = ax.plot(
                [r["problems"] for r in mine], [r[key] for r in mine], marker, alpha=0.6, label=f"{source} -> {new}"
            )
            ax.axhline(full[key], color=line[0].get_color(), ls="--", lw=1)
            ax.set_xscale("log")
            ax.set_xticks(SIZES, [str(n) for n in SIZES])
            ax.minorticks_off()
            ax.set_xlabel("problems of the new GPU")
            ax.set_title(key.replace("_", " "))
    axes[0].legend(title="dashed: the new GPU's full model", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def summarize(rows: list[dict], at: int = 100) -> dict:
    """Per direction at ``at`` problems: the worst over seeds of each figure, and the full model's."""
    out = {}
    for source, new in (("h100", "h200"), ("h200", "h100")):
        mine = [r for r in rows if r["source"] == source and r["problems"] == at]
        full = next((r for r in rows if r["source"] == source and r["problems"] == "all"), None)
        start = next((r for r in rows if r["source"] == source and r["problems"] == 0), None)
        if not mine or full is None or start is None:
            continue
        out[f"{source}_to_{new}"] = {
            "source_model": start["source_model"],
            "problems": at,
            "seeds": len(mine),
            "first_pick_geomean_over_full_worst_seed": max(r["first_pick_geomean"] for r in mine)
            / full["first_pick_geomean"],
            "first_pick_worst_worst_seed": max(r["first_pick_worst"] for r in mine),
            "unsure_fraction_worst_seed": max(r["unsure_fraction"] for r in mine),
            "outcome_worst_worst_seed": max(r["outcome_worst"] for r in mine),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="sample sizes")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--all-seeds-at", type=int, default=100, help="the sample size run with every seed (the others: the first)"
    )
    parser.add_argument(
        "--directions",
        nargs="+",
        choices=["h100:h200", "h200:h100"],
        default=["h100:h200", "h200:h100"],
        help="SOURCE:NEW pairs",
    )
    add_source_model_option(parser)
    parser.add_argument("--out", required=True, help="JSON report (the plot beside it, .png)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    given = source_models(args.source_model)
    rows = []
    for pair in args.directions:
        source, new = pair.split(":")
        rows += curve(source, new, args.sizes, args.seeds, args.all_seeds_at, given.get(source))
    report = cpu_report_header("CPU (adapted models judged on data measured on the GPU named in each row)")
    report.update(adapt=ADAPT, summary=summarize(rows, args.all_seeds_at), rows=rows)
    write_json(args.out, report)
    plot(rows, Path(args.out).with_suffix(".png"))
    print(
        f"{'source':7s} {'new':5s} {'N':>4s} {'seed':>4s} {'first gm':>9s} {'worst':>7s} {'unsure':>7s} "
        f"{'outcome':>7s} {'top1':>7s}"
    )
    for r in rows:
        print(
            f"{r['source']:7s} {r['new']:5s} {r['problems']!s:>4s} {r['seed']!s:>4s} {r['first_pick_geomean']:9.4f} "
            f"{r['first_pick_worst']:7.3f} {r['unsure_fraction']:7.3f} {r['outcome_worst']:7.3f} "
            f"{r['triton_top1_perf_geomean']:7.4f}"
        )
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
