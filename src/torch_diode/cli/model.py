"""`diode train`, `predict`, `validate-model`, `validate-max-autotune`, `list-models`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import OptionError, UserError
from ..types import OPS
from .common import (
    MAX_SEED,
    _number,
    add_force,
    check_outputs,
    dataset_output,
    factor,
    nonnegative_float,
    nonnegative_int,
    open_fraction,
    positive_float,
    positive_int,
    seed,
    write_report,
)

if TYPE_CHECKING:
    from ..training.train import TrainConfig
    from ..types import Dataset, Hardware, Problem


def _inputs(args: argparse.Namespace) -> dict:
    """The files a model command reads, by option (for :func:`check_outputs`)."""
    from ..registry import resolve_model

    inputs = {"--dataset": args.dataset, "--data-dir": args.data_dir}
    for i, path in enumerate(getattr(args, "prior_data", None) or []):
        inputs[f"--prior-data[{i}]"] = path
    for i, path in enumerate(getattr(args, "exclude", None) or []):
        if Path(path).exists():  # otherwise a shapeset's name
            inputs[f"--exclude[{i}]"] = path
    if getattr(args, "max_autotune_solution", None):
        inputs["--max-autotune-solution"] = args.max_autotune_solution
    if args.command != "train":
        try:
            inputs["--model"] = str(resolve_model(args.model))
        except FileNotFoundError:
            pass  # loading it names what is missing
    elif args.init_model:
        try:
            inputs["--init-model"] = str(resolve_model(args.init_model))
        except FileNotFoundError as e:
            raise OptionError("--init-model", str(e)) from None
    return inputs


def _input_paths(args: argparse.Namespace) -> list[str]:
    inputs = [args.dataset] if args.dataset else []
    if args.data_dir:
        inputs.append(args.data_dir)
    if not inputs:
        raise OptionError("--dataset/--data-dir", "give --dataset FILE or --data-dir DIR")
    return inputs


def _load(args: argparse.Namespace):
    from ..dataset_io import load_datasets

    return load_datasets(_input_paths(args), args.file_extensions)


def _without_heldout(dataset, args: argparse.Namespace, paths: list[str] | None = None):
    """The training data (read from ``paths``, default the --dataset/--data-dir inputs) without the
    problems of the held-out shapesets: refused (UserError naming a file and a problem) unless
    --drop-heldout drops them."""
    from ..collection.shapes import heldout_matches, problem_identity
    from ..dataset_io import dataset_files, load_dataset

    matches = heldout_matches(p for _, p, _ in dataset.problems())
    if not matches:
        return dataset
    held = {problem_identity(p) for p, _, _ in matches}
    if args.drop_heldout:
        print(f"train: {len(held)} problems of held-out shapesets left out (--drop-heldout)")
        return dataset.subset(lambda hw, p: problem_identity(p) not in held)
    problem, name, entry = matches[0]
    files = [f for path in paths or _input_paths(args) for f in dataset_files(path, args.file_extensions)]
    source = next(
        f
        for f in files
        if any(problem_identity(p) == problem_identity(problem) for _, p, _ in load_dataset(f).problems())
    )
    raise UserError(
        f"{source}: holds {problem.short()}, a problem of the held-out shapeset {name} "
        f"({entry.model}, {entry.layer}), {len(held)} such problems in all: models are judged on "
        "them and never trained on them (--drop-heldout leaves them out)"
    )


def _without_exclusions(dataset: Dataset, excluded: Callable[[Hardware, Problem], bool] | None, what: str) -> Dataset:
    """``dataset`` without the measurements ``excluded`` names (a predicate of hardware and problem,
    :func:`excluded_measurements` of the paths --exclude names)."""
    if excluded is None:
        return dataset
    kept = dataset.subset(lambda hw, p: not excluded(hw, p))
    print(f"train: {dataset.num_problems - kept.num_problems} problems of {what} left out (--exclude)")
    return kept


def training_data(args: argparse.Namespace) -> tuple[Dataset, dict | None, frozenset]:
    """The data `diode train` fits (its inputs less the held-out problems and --exclude, with
    --prior-data's problems the inputs lack), the record of the prior data added (or None) and the
    keys of its problems."""
    from ..collection.shapes import excluded_measurements
    from ..dataset_io import load_datasets
    from ..training.train import with_prior_data

    excluded = excluded_measurements(args.exclude) if args.exclude else None
    dataset = _without_exclusions(_without_heldout(_load(args), args), excluded, "the training data")
    if not args.prior_data:
        return dataset, None, frozenset()
    loaded = _without_heldout(load_datasets(args.prior_data, args.file_extensions), args, args.prior_data)
    loaded = _without_exclusions(loaded, excluded, "--prior-data")
    dataset, prior, keys = with_prior_data(dataset, loaded, args.hardware_name)
    print(
        f"train: {prior['problems']} problems measured on {', '.join(prior['device_names']) or 'no other GPU'} "
        f"that the data of {prior['device_name']} lacks, trained on as measured there (--prior-data)"
    )
    return dataset, prior, keys


# the options of the members' form: option, TrainConfig field, what it sets
FORM_OPTIONS = (
    ("--model-type", "model_type", "model family"),
    ("--hidden-dim", "hidden_dim", "hidden width"),
    ("--num-layers", "num_layers", "number of hidden layers"),
    ("--ensemble", "ensemble", "number of members"),
    ("--bootstrap", "bootstrap", "bootstrap"),
)


def _shown(value) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def members_form(args: argparse.Namespace) -> dict:
    """The TrainConfig fields of --model-type, --hidden-dim, --num-layers, --ensemble and
    --bootstrap: as given, else TrainConfig's defaults; with --init-model, an option left out takes
    the init model's form (``init_model_form``) and one given that differs from it is refused
    (OptionError naming the option and both values), before any data is read."""
    from dataclasses import fields

    from ..model_file import read_model
    from ..registry import resolve_model
    from ..training.train import TrainConfig, init_model_form

    given = {field: getattr(args, field) for _, field, _ in FORM_OPTIONS}
    given["bootstrap"] = True if args.bootstrap else None  # a flag: off is not given
    if args.init_model:
        form = init_model_form(read_model(resolve_model(args.init_model)))
        for option, field, what in FORM_OPTIONS:
            if given[field] is not None and field in form and given[field] != form[field]:
                raise OptionError(
                    option,
                    f"{_shown(given[field])} contradicts --init-model {args.init_model}, whose {what} is "
                    f"{_shown(form[field])}: leave {option} out to follow it",
                )
        given.update(form)
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    return {field: defaults[field] if value is None else value for field, value in given.items()}


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig of `diode train`'s options (a model records it as its ``training``)."""
    from ..training.train import TrainConfig

    form = members_form(args)
    if args.seed + form["ensemble"] - 1 > MAX_SEED:
        raise OptionError(
            "--seed", f"the ensemble's last member would take seed {args.seed + form['ensemble'] - 1}, over {MAX_SEED}"
        )
    if form["bootstrap"] and form["ensemble"] < 2:
        raise OptionError("--bootstrap", "resamples the problems per ensemble member: give --ensemble 2 or more")
    if args.prior_share is not None and not args.prior_data:
        raise OptionError("--prior-share", "shares each epoch between the data and --prior-data: give --prior-data")
    if args.trainable_layers is not None and not args.init_model:
        raise OptionError("--trainable-layers", "fits the last layers of --init-model's members: give --init-model")
    if args.trainable_layers and args.trainable_layers > (layers := form["num_layers"] + 1):
        raise OptionError("--trainable-layers", f"{args.trainable_layers} is more than --init-model's {layers} layers")
    if form["bootstrap"] and args.prior_share is not None:
        raise OptionError(
            "--prior-share", "draws --prior-data's problems per epoch: it does not combine with --bootstrap"
        )
    return TrainConfig(
        **form,
        batch_size=args.batch_size,
        num_epochs=args.num_epochs,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        patience=args.patience,
        validation_fraction=args.validation_fraction,
        seed=args.seed,
        lr_schedule=args.lr_schedule,
        loss=args.loss,
        extern_weight=args.extern_weight,
        clip_slowdown=args.clip_slowdown,
        init_model=args.init_model,
        prior_share=args.prior_share,
        trainable_layers=args.trainable_layers,
    )


def _cmd_train(args: argparse.Namespace) -> int:
    from ..model_file import write_model
    from ..training.train import train_model

    check_outputs(_inputs(args), {"--model": args.model}, force=args.force)
    config = train_config(args)
    dataset, prior, prior_keys = training_data(args)
    model, report = train_model(
        dataset,
        config,
        hardware_name=args.hardware_name,
        op_name=args.op_name,
        log_dir=args.log_dir,
        prior_data=prior,
        prior_problems=prior_keys,
    )
    write_model(args.model, model)
    val = f"{report.validation_mse:.4f}" if report.validation_mse is not None else "-"
    print(
        f"trained {config.model_type} ({model.dims}, {config.fitted(len(model.members))}) "
        f"on {report.train_problems} problems, {report.rows} rows: "
        f"train MSE {report.train_mse:.4f}, held-out MSE {val} (ln time_us), "
        f"best epoch {report.best_epoch + 1}/{report.epochs_run}"
    )
    print(f"model written to {args.model}")
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    from ..dataset_io import save_dataset
    from ..predict import predict_dataset

    check_outputs(
        _inputs(args),
        {"--output": args.output},
        dataset_outputs=["--output"],
        extensions=args.file_extensions,
        force=args.force,
    )
    out = predict_dataset(args.model, _load(args))
    save_dataset(out, args.output)
    print(f"predicted {out.num_timed_configs} (problem, config) times for {out.num_problems} problems -> {args.output}")
    return 0


def _cmd_validate_model(args: argparse.Namespace) -> int:
    from ..evaluation import plot_validation, validate_model

    check_outputs(_inputs(args), {"--report-json": args.report_json, "--by-op-json": args.by_op_json}, force=args.force)
    if args.plot and Path(args.plot).exists() and not Path(args.plot).is_dir():
        raise OptionError("--plot", f"{args.plot} is a file; give a folder for the plots")
    r = validate_model(
        args.model, _load(args), hardware_name=args.hardware_name, op_name=args.op_name, top_n_worst=args.top_n_worst
    )
    print(f"problems: {r['num_problems']}, configs timed successfully: {r['num_timed_configs']}")
    print(f"Validation Loss (MSE): {r['mse']:.6f}")
    print(f"Validation RMSE: {r['rmse']:.6f}")
    print(f"Validation RMSE (exp): {r['exp_rmse']:.6f}")
    print(f"top-1 perf geomean: {r['top1_perf_geomean']:.4f}   top-5 perf geomean: {r['top5_perf_geomean']:.4f}")
    print(
        f"Kendall tau mean: {r['kendall_tau_mean']:.4f}   top-1 within 5%: {100 * r['within_5pct_fraction']:.1f}%   "
        f"worst top-1 slowdown: {r['worst_top1_slowdown']:.3f}"
    )
    c = r["calibration"]
    if c is None or not c["problems"]:
        print(
            "calibration: none (the model's contract records no loss calibration, or no first pick here is a template)"
        )
    else:
        print(
            "\ncalibration: estimated vs observed probability that the first pick is "
            f"> {c['margin']:g}x slower than the best ATen choice "
            f"({c['problems']} problems; {c['aten_first_picks']} more picked ATen): Brier {c['brier']:.4f}"
        )
        for b in c["bins"]:
            if b["problems"]:
                print(
                    f"  estimate {b['estimate_from']:.2f}-{b['estimate_to']:.2f}: {b['problems']:4d} problems, "
                    f"mean estimate {b['estimate_mean']:.3f}, observed {b['observed_loss_fraction']:.3f}"
                )
        for kind, k in c["by_kind"].items():
            if k["problems"]:
                own = " (its own calibration)" if kind == "misaligned" and c["misaligned_calibration"] else ""
                print(
                    f"  {kind}{own}: {k['problems']:4d} problems, mean estimate {k['estimate_mean']:.3f}, "
                    f"observed {k['observed_loss_fraction']:.3f}"
                )
    if r["worst_predictions"]:
        print(f"\nTop {len(r['worst_predictions'])} worst predictions:")
        for i, w in enumerate(r["worst_predictions"], 1):
            print(
                f"Error {i}: Predicted: {w['predicted_us']:.1f} us, Actual: {w['measured_us']:.1f} us "
                f"({w['ratio']:.2f}x ratio)  {w['problem']}  {w['config']}"
            )
    for op, o in r["by_op"].items():
        print(
            f"  {op}: {o['num_problems']} problems, exp(RMSE) {o['exp_rmse']:.3f}, top-1 {o['top1_perf_geomean']:.4f}, "
            f"top-5 {o['top5_perf_geomean']:.4f}, worst top-1 slowdown {o['worst_top1_slowdown']:.3f}"
        )
    if args.plot:
        for path in plot_validation(r, args.plot):
            print(f"plot written to {path}")
    write_report(args.report_json, r, args.argv)
    _write_by_op(args.by_op_json, r)
    return 0


def _write_by_op(path: str | None, report: dict) -> None:
    """--by-op-json: the report's per-op part alone (the seeds' model_performance_analysis_by_op.json)."""
    if path:
        write_report(path, report["by_op"])
        print(f"Comprehensive per-op statistics saved to: {path}")


def _cmd_validate_max_autotune(args: argparse.Namespace) -> int:
    from ..evaluation import validate_max_autotune

    check_outputs(_inputs(args), {"--report-json": args.report_json, "--by-op-json": args.by_op_json}, force=args.force)
    r = validate_max_autotune(
        args.model,
        _load(args),
        solution=args.max_autotune_solution,
        hardware_name=args.hardware_name,
        op_name=args.op_name,
        extern_preference=args.extern_preference,
    )
    print("MODEL VS MAX-AUTOTUNE COMPARISON RESULTS")
    print(f"problems: {r['num_problems']}; max-autotune's choice: {r['max_autotune_source']}")
    print(
        "ratio = max-autotune's kernel time / best of the model's top-N (> 1: the model's pick is faster); "
        f"the model's order as diode's handler uses it (extern preference {r['extern_preference']:g})"
    )
    print(
        f"{'top-N':>6s} {'geomean':>8s} {'median':>8s} {'p10':>7s} {'p90':>7s} "
        f"{'better':>7s} {'equal':>7s} {'worse':>7s} {'saved us':>10s}"
    )
    for n, s in r["top_n"].items():
        print(
            f"{n:>6s} {s['ratio_geomean']:8.3f} {s['ratio_median']:8.3f} {s['ratio_p10']:7.3f} {s['ratio_p90']:7.3f} "
            f"{s['better_pct']:6.1f}% {s['equal_pct']:6.1f}% {s['worse_pct']:6.1f}% {s['time_saved_us_total']:10.1f}"
        )
    for op, o in r["by_op"].items():
        print(
            f"  {op}: {o['num_problems']} problems, top-1 ratio geomean "
            f"{o['top_n'][min(o['top_n'], key=int)]['ratio_geomean']:.3f}"
        )
    write_report(args.report_json, r, args.argv)
    _write_by_op(args.by_op_json, r)
    return 0


def _cmd_list_models(args: argparse.Namespace) -> int:
    from ..model_file import model_metadata, read_validation_summary
    from ..registry import available_models

    models = available_models()
    if not models:
        print("no models installed (train one with `diode train`, pass it to --model by path)")
    for name, path in models.items():
        meta = model_metadata(path)
        data = meta.get("training_data", {})
        print(
            f"{name}: {meta.get('hardware', {}).get('device_name')} {meta.get('model_family')} "
            f"{data.get('problems')} problems ({', '.join(data.get('ops', []))}) -> {path}"
        )
        v = read_validation_summary(path)
        if v is not None:
            print(
                f"  validated on {v.get('dataset', v.get('num_problems'))}: top-1 {v['top1_perf_geomean']:.3f}, "
                f"top-5 {v['top5_perf_geomean']:.3f}, exp(RMSE) {v['exp_rmse']:.3f}, "
                f"worst top-1 slowdown {v['worst_top1_slowdown']:.3f}"
            )
    return 0


def _data_options(p: argparse.ArgumentParser, required_model: bool = True) -> None:
    p.add_argument("--model", required=required_model, help="model file, or the name of a shipped/registered model")
    p.add_argument("--dataset", help="dataset file")
    p.add_argument("--data-dir", help="folder of dataset files")
    p.add_argument("--file-extensions", nargs="+", metavar="EXT", help="in --data-dir, read only these suffixes")
    p.add_argument("--hardware-name", help="only problems measured on hardware whose name contains this")
    p.add_argument("--op-name", choices=OPS, help="only this op")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=512,
        help="rows per training step (train; the other commands accept it, as the seeds' did, and "
        "score whole problems at once)",
    )


def _seed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="accepted as the seeds' toolkit did (`diode --seed 42 validate-model ...`); "
        "this command is deterministic and draws nothing at random",
    )


def _fit_options(p: argparse.ArgumentParser) -> None:
    """`diode train`'s options of the model and its fit."""
    # the members' form: left out (None) with --init-model, the init model's (members_form)
    p.add_argument("--model-type", choices=["base", "deep"], help="model family (default base)")
    p.add_argument("--hidden-dim", type=positive_int, help="hidden width (default: the family's)")
    p.add_argument("--num-layers", type=positive_int, help="hidden layers (default: the family's)")
    p.add_argument("--num-epochs", type=positive_int, default=50, help="training epochs, >= 1 (default 50)")
    p.add_argument(
        "--learning-rate", type=positive_float, default=1e-3, help="AdamW learning rate, > 0 (default 0.001)"
    )
    p.add_argument(
        "--weight-decay", type=nonnegative_float, default=1e-5, help="AdamW weight decay, >= 0 (default 1e-5)"
    )
    p.add_argument(
        "--lr-schedule",
        choices=["cosine", "constant"],
        default="cosine",
        help="cosine: the learning rate decays to 0 over --num-epochs (default); constant: it stays",
    )
    p.add_argument(
        "--loss",
        choices=["mse", "listwise"],
        default="mse",
        help="mse: squared error of ln time (default); listwise: that plus a softmax cross-entropy over each "
        "problem's candidates (the loss sees them together)",
    )
    p.add_argument(
        "--ensemble",
        type=_number(int, 1, 64),
        help="members (seeds --seed, --seed + 1, ...): their spread is the model's uncertainty (default 1)",
    )
    p.add_argument(
        "--bootstrap",
        action="store_true",
        help="each ensemble member fits its own resample of the training problems (drawn with replacement; "
        "needs --ensemble 2 or more)",
    )
    p.add_argument(
        "--extern-weight",
        type=positive_float,
        default=1.0,
        help="weight of each ATen (cuBLAS) row's squared error against a Triton row's, > 0 (default 1): a "
        "problem has one or two ATen choices among a hundred or more Triton configs",
    )
    p.add_argument(
        "--clip-slowdown",
        type=_number(float, 1.0, lo_open=True),
        default=None,
        help="train a row measured more than this many times its problem's best time as that many times, > 1 "
        "(default: none clipped; the slow rows hold most of the squared error)",
    )
    p.add_argument("--patience", type=positive_int, default=10, help="epochs without improvement before stopping")
    p.add_argument(
        "--validation-fraction",
        type=open_fraction(lo_open=False),
        default=0.15,
        help="share of problems held out, in [0, 1) (default 0.15; 0: none)",
    )
    p.add_argument("--log-dir", help="write TensorBoard logs here")
    p.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="random seed, 0 to 2^32-1; ensemble members take --seed, --seed + 1, ... (default 0)",
    )


def _training_data_options(p: argparse.ArgumentParser) -> None:
    """`diode train`'s options of what it trains on beyond its inputs, and what it starts from."""
    p.add_argument(
        "--prior-data",
        nargs="+",
        metavar="PATH",
        help="dataset files or folders measured on another GPU of the same architecture (an H100's for "
        "an H200 model): their problems that the training data lacks are trained on as if measured on "
        "the training data's GPU, and recorded so in the model",
    )
    p.add_argument(
        "--init-model",
        metavar="MODEL",
        help="start from this model's members (a shipped name or a file; its dims, member count and "
        "normalisation) instead of random ones: another GPU's model adapted to this GPU's data "
        "(docs/contributing.md, 'Adding a GPU'). --model-type, --hidden-dim, --num-layers and --ensemble "
        "left out take the model's; one given that differs from it is refused, as is --bootstrap",
    )
    p.add_argument(
        "--trainable-layers",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --init-model: fit only the last N linear layers of its members and keep the others' "
        "weights (1: a correction of the output layer on the other GPU's learned features; default: all)",
    )
    p.add_argument(
        "--prior-share",
        type=open_fraction(lo_open=True),
        default=None,
        help="with --prior-data: each epoch trains on every problem of the data and a fresh draw of "
        "--prior-data's making this share of the epoch's problems, in (0, 1), and the held-out error "
        "weighs them as this share (default: every problem once per epoch)",
    )
    p.add_argument(
        "--exclude",
        nargs="+",
        metavar="PATH",
        help="dataset files or folders, or shapesets, whose problems are left out of training (and of "
        "--prior-data): a dataset's where measured on its GPU, a shapeset's on any; e.g. one GPU's "
        "timings known to be wrong until they are measured again",
    )
    p.add_argument(
        "--drop-heldout",
        action="store_true",
        help="leave out the problems of the held-out shapesets (realmodels_heldout) instead of refusing "
        "a dataset that holds one",
    )


def add_model_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train a runtime model on datasets",
        description="Train an MLP predicting ln(time_us) of (problem, config) pairs; split by problem.",
    )
    _data_options(p)
    _fit_options(p)
    _training_data_options(p)
    add_force(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser(
        "predict",
        help="write predicted times for every (problem, config) of a dataset",
        description="Predict time_us for every (problem, config) of a dataset, in the dataset format.",
    )
    _data_options(p)
    _seed_option(p)
    p.add_argument("--output", "-o", required=True, type=dataset_output, help="dataset file of predictions")
    add_force(p)
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser(
        "validate-model",
        help="error and ranking metrics of a model on a dataset",
        description="MSE/RMSE of ln time, the worst predictions, and per-problem ranking metrics.",
    )
    _data_options(p)
    _seed_option(p)
    p.add_argument("--top-n-worst", type=nonnegative_int, default=10, help="how many worst predictions to list")
    p.add_argument("--report-json", metavar="R", help="write the report as JSON")
    p.add_argument("--plot", metavar="DIR", help="save predicted-vs-measured and slowdown-CDF plots here")
    p.add_argument("--by-op-json", metavar="F", help="write the per-op figures (the report's by_op) as JSON")
    add_force(p)
    p.set_defaults(func=_cmd_validate_model)

    p = sub.add_parser(
        "validate-max-autotune",
        help="the model's top-N picks vs max-autotune's choice",
        description="For N in 1, 5, 10, 20, 50: max-autotune's chosen time / best of the model's top-N.",
    )
    _data_options(p)
    _seed_option(p)
    p.add_argument(
        "--max-autotune-solution", metavar="F", help="JSON of max-autotune's chosen configs (default: derived)"
    )
    p.add_argument(
        "--extern-preference",
        type=factor,
        default=None,
        help="ATen/cuBLAS leads unless a Triton config is predicted this factor (>= 1) faster, as in the "
        "handler (default: torch_diode.config.extern_preference; 1.0: the model's plain order)",
    )
    p.add_argument("--report-json", metavar="R", help="write the report as JSON")
    p.add_argument(
        "--by-op-json",
        metavar="F",
        help="write the per-op figures (the report's by_op) as JSON, e.g. model_performance_analysis_by_op.json",
    )
    add_force(p)
    p.set_defaults(func=_cmd_validate_max_autotune)

    p = sub.add_parser(
        "list-models",
        help="models installed with torch-diode or registered",
        description="List the models found by name.",
    )
    p.set_defaults(func=_cmd_list_models)
