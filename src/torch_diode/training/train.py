"""Training: split by problem, standardise, fit an MLP on ln(time_us), export the model file."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np
import torch

from ..errors import UserError
from ..features import FEATURE_NAMES, FEATURE_VERSION, config_rows, is_extern
from ..model_file import ModelFile
from ..types import Dataset, problem_key
from .confidence import held_out_contract, training_data_summary
from .data import TrainingArrays, build_arrays, matches_hardware, one_device, split_groups
from .model import MLP, MODEL_FAMILIES, Ensemble, Regressor

logger = logging.getLogger(__name__)

LR_SCHEDULES = ("cosine", "constant")
# "mse": squared error of ln(time_us); "listwise": that plus, per problem, the cross-entropy
# between the softmax of its candidates' measured and predicted -ln(time_us) / LISTWISE_TEMPERATURE
# (the loss sees a problem's candidates together: what ranks them, not only each one's time)
LOSSES = ("mse", "listwise")
LISTWISE_TEMPERATURE = 0.1  # ln units: candidates within ~10% of the best share its weight
CHOOSE_ONE = "choose one with --hardware-name"


@dataclass
class TrainConfig:
    model_type: str = "base"
    hidden_dim: int | None = None  # None: the family's
    num_layers: int | None = None
    batch_size: int = 512
    num_epochs: int = 50
    learning_rate: float = 1e-3
    weight_decay: float = 1e-5
    patience: int = 10
    validation_fraction: float = 0.15
    seed: int = 0
    # "cosine": the learning rate decays to 0 over num_epochs (one cosine half-period);
    # "constant": it stays at learning_rate
    lr_schedule: str = "cosine"
    # "listwise" ranks the held-out Triton candidates better than "mse" at the same budget, but the
    # handler's first picks have a longer tail and its ln times are too far off for the loss
    # calibration (benchmarks/results/ranking_loss_cpu.json)
    loss: str = "mse"
    # members of the ensemble (seeds seed, seed + 1, ...; one split, one normalisation): their
    # spread is the model's uncertainty, which the handler reads (selection.decide)
    ensemble: int = 1
    # each member fits its own resample of the training problems (drawn with replacement, as many
    # as there are): members disagree more where few problems are alike, which is what their
    # spread should say (benchmarks.studies.slow_picks uncertainty measures it)
    bootstrap: bool = False
    # the squared error of each ATen (cuBLAS) row counts this many times a Triton row's: a problem
    # has one or two ATen choices among a hundred or more Triton configs, so at 1 the fit of
    # cuBLAS's time, which decides most of the handler's picks, barely weighs in the loss
    extern_weight: float = 1.0
    # where set, a row measured more than this many times its problem's best time is trained (and
    # early-stopped on) as that many times (None: every row at its measured time). The slow rows
    # hold most of the squared error, but clipping them ranks held-out Triton configs worse
    # (benchmarks/results/training_variants_cpu.txt): how slow a slow config is keeps it away
    # from the top on unseen problems
    clip_slowdown: float | None = None
    # where set, the model file (path or shipped name) whose members the fit starts from, with its
    # dims, member count and normalisation: a model of one GPU adapted to another's measurements
    # (docs/contributing.md, "Adding a GPU"); None: members initialised at random
    init_model: str | None = None
    # where set (0 < share < 1, with --prior-data), each epoch trains on every problem of the GPU's
    # own data and a fresh draw of the prior data's problems making this share of the epoch's, and
    # the held-out error weighs the prior's problems as this share: a few hundred problems of a new
    # GPU then weigh as much as the thousands of another's, and an epoch costs a fraction of one
    # over all (None: every problem, each once per epoch)
    prior_share: float | None = None
    # where set (with init_model), only the last this many linear layers of each member are fitted
    # and the others keep init_model's weights: a correction of few parameters on the other GPU's
    # learned features. Fitting every layer to a hundred problems of a new GPU moved first picks of
    # problems unlike the sample's (benchmarks/results/adapt_layers_cpu.json)
    trainable_layers: int | None = None

    def fitted(self, members: int) -> str:
        """How a model of ``members`` members was fitted under this config, for a summary line."""
        form = f"{members} member{'s' if members > 1 else ''}" + (" (bootstrap)" if self.bootstrap else "")
        if self.init_model:
            layers = f"last {self.trainable_layers} layer(s)" if self.trainable_layers else "every layer"
            form += f", from {self.init_model} ({layers} fitted)"
        return form

    def resolved(self) -> tuple[int, int]:
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if not 1 <= self.ensemble <= 64:
            raise ValueError(f"ensemble must be 1..64 members, got {self.ensemble}")
        if not (math.isfinite(self.extern_weight) and self.extern_weight > 0):
            raise ValueError(f"extern_weight must be a positive number, got {self.extern_weight}")
        if self.clip_slowdown is not None and not (math.isfinite(self.clip_slowdown) and self.clip_slowdown > 1):
            raise ValueError(f"clip_slowdown must be a number > 1, got {self.clip_slowdown}")
        if self.prior_share is not None and not 0.0 < self.prior_share < 1.0:
            raise ValueError(f"prior_share must be between 0 and 1, got {self.prior_share}")
        if self.trainable_layers is not None and (self.init_model is None or self.trainable_layers < 1):
            raise ValueError(f"trainable_layers needs init_model and must be >= 1, got {self.trainable_layers}")
        if self.prior_share is not None and self.bootstrap:
            raise ValueError("prior_share draws the prior problems per epoch: it does not combine with bootstrap")
        if self.bootstrap and self.ensemble < 2:
            raise ValueError("bootstrap resamples the problems per ensemble member: give an ensemble of 2 or more")
        if self.model_type not in MODEL_FAMILIES:
            raise ValueError(f"model type must be one of {sorted(MODEL_FAMILIES)}, got {self.model_type!r}")
        family = MODEL_FAMILIES[self.model_type]
        return self.hidden_dim or family["hidden_dim"], self.num_layers or family["num_layers"]


@dataclass
class TrainReport:
    epochs_run: int
    best_epoch: int
    train_mse: float  # ln(time_us) squared error, training problems
    validation_mse: float | None  # held-out problems (None without a validation split)
    train_problems: int
    validation_problems: int
    rows: int


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std = np.where(std < 1e-6, 1.0, std)  # constant features (one-hots never seen) pass through
    return mean.astype(np.float32), std.astype(np.float32)


def _mse(
    model: Regressor, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None, batch: int = 65536
) -> float:
    """The squared error of ln(time_us) over the rows (their ``weight``-weighted mean where given)."""
    with torch.no_grad():
        err = torch.cat([model(x[i : i + batch]) - y[i : i + batch] for i in range(0, len(x), batch)])
    if not len(err):
        return math.nan
    return float((err**2).mean()) if weight is None else float((err**2 * weight).sum() / weight.sum())


@dataclass
class _Rows:
    """Rows of a fit: features, ln(time_us) targets, each row's problem (0..n-1) and weight in the
    squared error, and for training rows with --prior-data, which problems are the prior's."""

    x: torch.Tensor
    y: torch.Tensor
    group: torch.Tensor
    weight: torch.Tensor | None = None
    prior: torch.Tensor | None = None  # bool per problem

    def rows(self, index: torch.Tensor) -> _Rows:
        return _Rows(
            self.x[index], self.y[index], self.group[index], None if self.weight is None else self.weight[index]
        )


def _epoch_problems(rows: _Rows, share: float | None, generator: torch.Generator) -> torch.Tensor | None:
    """The problems an epoch trains on: all (None), or with ``share`` and prior problems, every
    problem of the GPU's own and a fresh draw of prior ones making ``share`` of the epoch's."""
    if share is None or rows.prior is None:
        return None
    own, prior = torch.nonzero(~rows.prior).flatten(), torch.nonzero(rows.prior).flatten()
    count = min(len(prior), round(len(own) * share / (1.0 - share)))
    return torch.cat([own, prior[torch.randperm(len(prior), generator=generator)[:count]]])


def _listwise(predicted: torch.Tensor, target: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
    """Mean over the problems in ``group`` of the cross-entropy between the softmax of measured and
    of predicted -ln(time) / LISTWISE_TEMPERATURE within each problem."""
    groups, index = torch.unique(group, return_inverse=True)
    n = len(groups)

    def log_softmax(score: torch.Tensor) -> torch.Tensor:
        top = torch.full((n,), -math.inf).scatter_reduce(0, index, score.detach(), "amax")
        shifted = score - top[index]
        return shifted - torch.zeros(n).index_add(0, index, shifted.exp()).log()[index]

    p = log_softmax(-target / LISTWISE_TEMPERATURE).exp()
    return -torch.zeros(n).index_add(0, index, p * log_softmax(-predicted / LISTWISE_TEMPERATURE)).mean()


def _batches(
    config: TrainConfig, group: torch.Tensor, generator: torch.Generator, problems: torch.Tensor | None = None
) -> list[torch.Tensor]:
    """Row indices of each step: shuffled rows for "mse"; whole problems (shuffled, about
    ``batch_size`` rows a step) for "listwise", whose loss compares a problem's candidates. Only the
    rows of ``problems`` where given."""
    if config.loss == "mse":
        chosen = torch.arange(len(group)) if problems is None else torch.nonzero(torch.isin(group, problems)).flatten()
        order = chosen[torch.randperm(len(chosen), generator=generator)]
        return [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]
    sizes = torch.bincount(group)
    by_group = torch.argsort(group, stable=True).split(sizes.tolist())
    batches, current, rows = [], [], 0
    if problems is None:
        order = torch.randperm(len(sizes), generator=generator)
    else:
        order = problems[torch.randperm(len(problems), generator=generator)]
    for g in order.tolist():
        current.append(by_group[g])
        rows += len(by_group[g])
        if rows >= config.batch_size:
            batches.append(torch.cat(current))
            current, rows = [], 0
    if current:
        batches.append(torch.cat(current))
    return batches


def _resample(group: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A bootstrap resample of the problems of ``group`` (a problem index per row, 0..n-1): n
    problems drawn with replacement under ``seed``; returns (row indices, the rows' problem index in
    the resample, a drawn-twice problem being two problems)."""
    sizes = torch.bincount(group)
    by_group = torch.argsort(group, stable=True).split(sizes.tolist())
    drawn = torch.randint(len(sizes), (len(sizes),), generator=torch.Generator().manual_seed(seed)).tolist()
    rows = torch.cat([by_group[g] for g in drawn])
    groups = torch.repeat_interleave(torch.arange(len(drawn)), sizes[drawn])
    return rows, groups


def _fit(
    model: Regressor,
    config: TrainConfig,
    seed: int,
    train: _Rows,
    val: _Rows,
    writer: Any,
    tag: str,
    progress: bool,
    fresh: bool = True,
) -> tuple[int, int]:
    """Fits ``model`` (in place, left at its best epoch by held-out MSE); returns (epochs run, best
    epoch). ``fresh``: the member starts from its own random initialisation under ``seed`` (else
    from its weights as given)."""
    from tqdm import tqdm

    torch.manual_seed(seed)
    for m in model.mlp.modules() if fresh else ():
        if isinstance(m, torch.nn.Linear):
            m.reset_parameters()
    generator = torch.Generator().manual_seed(seed)
    t_std = model.target_std
    layers = model.mlp.linears()
    for n, layer in enumerate(layers):  # trainable_layers: the last ones fitted, the others kept as given
        layer.requires_grad_(not config.trainable_layers or n >= len(layers) - config.trainable_layers)
    fitted = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(fitted, lr=config.learning_rate, weight_decay=config.weight_decay)
    # cosine decay: on the H100 data it picks better first kernels on held-out unaligned problems
    # than a constant rate
    schedule = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(1, config.num_epochs))
        if config.lr_schedule == "cosine"
        else None
    )
    best = (math.inf, 0, {k: v.clone() for k, v in model.state_dict().items()})
    epochs_run = 0
    bar = tqdm(range(config.num_epochs), desc=f"train {tag}".strip(), unit="epoch", disable=not progress)
    for epoch in bar:
        model.train()
        total, rows = 0.0, 0
        for idx in _batches(config, train.group, generator, _epoch_problems(train, config.prior_share, generator)):
            # the loss is on standardised targets; reported figures are in ln(time_us)
            batch = train.rows(idx)
            predicted = model(batch.x)
            error = ((predicted - batch.y) / t_std) ** 2
            squared = error.mean()
            weighted = (error * batch.weight).sum() / batch.weight.sum()
            loss = weighted if config.loss == "mse" else weighted + _listwise(predicted, batch.y, batch.group)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += squared.item() * len(idx)
            rows += len(idx)
        if schedule is not None:
            schedule.step()
        model.eval()
        train_mse = total / max(1, rows) * t_std**2
        val_mse = _mse(model, val.x, val.y, val.weight) if len(val.x) else math.nan
        watched = val_mse if len(val.x) else train_mse
        epochs_run = epoch + 1
        if writer is not None:
            writer.add_scalar(f"{tag}mse/train", train_mse, epoch)
            if len(val.x):
                writer.add_scalar(f"{tag}mse/validation", val_mse, epoch)
        bar.set_postfix(train=f"{train_mse:.4f}", val=f"{val_mse:.4f}")
        if watched < best[0] - 1e-7:
            best = (watched, epoch, {k: v.clone() for k, v in model.state_dict().items()})
        elif epoch - best[1] >= config.patience:
            logger.info("early stop at epoch %d (best %d)", epoch, best[1])
            break
    model.load_state_dict(best[2], strict=True)
    return epochs_run, best[1]


def with_prior_data(
    dataset: Dataset, prior: Dataset, hardware_name: str | None = None
) -> tuple[Dataset, dict[str, Any], frozenset]:
    """``dataset`` (one GPU's, or the problems on ``hardware_name``) with the problems of ``prior``
    (measured on another GPU) that it lacks, relabelled as measured on ``dataset``'s GPU, the
    record of what was added (the model's ``prior_data``) and the added problems' keys. Where both
    hold a problem, ``dataset``'s timings alone are kept."""
    own = [(hw, p) for hw, p, _ in dataset.problems() if not hardware_name or matches_hardware(hw, hardware_name)]
    one_device((hw for hw, _ in own), "the training data (--prior-data's problems take its GPU)", CHOOSE_ONE)
    target = own[0][0]
    out = dataset.subset(lambda hw, p: hw.device_name == target.device_name)
    have = {problem_key(p) for _, p in own}
    added: Counter = Counter()
    keys = set()
    for hw, problem, timings in prior.problems():
        key = problem_key(problem)
        if hw.device_name == target.device_name or key in have:
            continue
        out.add(target, problem, timings)
        have.add(key)
        keys.add(key)
        added[hw.device_name] += 1
    record = {"device_name": target.device_name, "device_names": sorted(added), "problems": sum(added.values())}
    return out, record, frozenset(keys)


def clipped_targets(arrays: TrainingArrays, slowdown: float) -> np.ndarray:
    """The ln(time_us) targets of ``arrays`` with every row capped at ln(``slowdown``) above its
    problem's best."""
    best = np.full(arrays.num_problems, np.inf, dtype=np.float64)
    np.minimum.at(best, arrays.group, arrays.log_time_us)
    cap = best[arrays.group] + math.log(slowdown)
    return np.minimum(arrays.log_time_us, cap).astype(np.float32)


def init_model_form(start: ModelFile) -> dict[str, Any]:
    """The TrainConfig fields that a fit from ``start``'s members (``init_model``) takes from it:
    its hidden width and layers, member count and family (where it records one of
    MODEL_FAMILIES), and no bootstrap (its members adapt on the same problems)."""
    hidden = start.dims[1:-1]
    form: dict[str, Any] = {
        "hidden_dim": hidden[0],
        "num_layers": len(hidden),
        "ensemble": len(start.members),
        "bootstrap": False,
    }
    family = start.metadata.get("model_family")
    if family in MODEL_FAMILIES:
        form["model_type"] = family
    return form


def _starting_members(config: TrainConfig, arrays: TrainingArrays, x_train: np.ndarray, y_train: np.ndarray):
    """(the config as run, the members to fit, whether they start at random, the features they
    read): new members on the training rows' normalisation, or ``config.init_model``'s members with
    its dims, normalisation and feature version (a model of an older version reads the first of
    the current features, as the engine does)."""
    if config.init_model is None:
        hidden_dim, num_layers = config.resolved()
        mean, std = _standardise(x_train)
        t_mean, t_std = float(y_train.mean()), float(max(y_train.std(), 1e-6))
        members = [
            Regressor(MLP(arrays.features.shape[1], hidden_dim, num_layers), mean, std, t_mean, t_std)
            for _ in range(config.ensemble)
        ]
        return config, members, True, {"feature_version": FEATURE_VERSION, "feature_names": list(FEATURE_NAMES)}
    from ..model_file import read_model
    from ..registry import resolve_model

    start = read_model(resolve_model(config.init_model))
    config = replace(config, **init_model_form(start))
    config.resolved()
    if (config.trainable_layers or 0) > len(start.dims) - 1:
        raise ValueError(f"trainable_layers {config.trainable_layers}: the init model has {len(start.dims) - 1} layers")
    members = [Regressor.from_model_file(start, k) for k in range(len(start.members))]
    features = {k: start.metadata[k] for k in ("feature_version", "feature_names")}
    return config, members, False, features


def _summary_writer(log_dir: str | None) -> Any:
    if not log_dir:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise UserError("--log-dir needs the tensorboard package: pip install tensorboard") from e
    return SummaryWriter(log_dir)


def _fit_rows(
    config: TrainConfig,
    arrays: TrainingArrays,
    val_rows: np.ndarray,
    targets: np.ndarray,
    prior_problems: Collection | None,
) -> tuple[_Rows, _Rows]:
    """The training and held-out rows. With ``config.prior_share`` the problems whose keys are in
    ``prior_problems`` (--prior-data's) are marked, and the held-out squared error weighs them as
    that share of it."""
    extern = is_extern(config_rows(arrays.configs))[~val_rows]
    train_groups, group = np.unique(arrays.group[~val_rows], return_inverse=True)
    train = _Rows(
        torch.from_numpy(arrays.features[~val_rows]),
        torch.from_numpy(targets[~val_rows]),
        torch.from_numpy(group),
        torch.from_numpy(np.where(extern, config.extern_weight, 1.0).astype(np.float32)),
    )
    val = _Rows(
        torch.from_numpy(arrays.features[val_rows]),
        torch.from_numpy(targets[val_rows]),
        torch.from_numpy(arrays.group[val_rows]),
    )
    if config.prior_share is None or not prior_problems:
        return train, val
    prior = _prior_problem_mask(arrays, prior_problems)
    train.prior = torch.from_numpy(prior[train_groups])
    held = prior[arrays.group[val_rows]]
    if held.any() and (~held).any():
        share = np.where(held, config.prior_share / held.sum(), (1.0 - config.prior_share) / (~held).sum())
        val.weight = torch.from_numpy(share.astype(np.float32))
    return train, val


def train_model(
    dataset: Dataset,
    config: TrainConfig,
    *,
    hardware_name: str | None = None,
    op_name: str | None = None,
    log_dir: str | None = None,
    progress: bool = True,
    prior_data: dict[str, Any] | None = None,
    prior_problems: Collection | None = None,
) -> tuple[ModelFile, TrainReport]:
    """Trains on ``dataset`` (problems on ``hardware_name``, op ``op_name``) and returns the model
    file contents and a report. Deterministic for a given ``config.seed``. ``prior_data``: what
    :func:`with_prior_data` added to ``dataset``, recorded in the model; ``prior_problems``: the
    keys of those problems (``config.prior_share`` draws them apart)."""
    config.resolved()
    arrays = build_arrays(dataset, hardware_name, op_name)
    one_device((hw for hw, _ in arrays.problems), "the training data", CHOOSE_ONE)
    val_problem = split_groups(arrays.num_problems, config.validation_fraction, config.seed)
    val_rows = val_problem[arrays.group]
    targets = arrays.log_time_us if config.clip_slowdown is None else clipped_targets(arrays, config.clip_slowdown)
    x_train, y_train = arrays.features[~val_rows], targets[~val_rows]
    config, members, fresh, features = _starting_members(config, arrays, x_train, y_train)

    train, val = _fit_rows(config, arrays, val_rows, targets, prior_problems)
    writer = _summary_writer(log_dir)
    runs = []
    for k, member in enumerate(members):
        rows = _resample(train.group, config.seed + k) if config.bootstrap else None
        fitted = train if rows is None else replace(train.rows(rows[0]), group=rows[1])
        tag = f"member{k}/" if config.ensemble > 1 else ""
        runs.append(_fit(member, config, config.seed + k, fitted, val, writer, tag, progress, fresh))
    if writer is not None:
        writer.close()
    model = members[0] if config.ensemble == 1 else Ensemble(members)
    report = TrainReport(
        epochs_run=max(r[0] for r in runs),
        best_epoch=max(r[1] for r in runs),
        train_mse=_mse(model, train.x, train.y),
        validation_mse=_mse(model, val.x, val.y) if len(val.x) else None,
        train_problems=int((~val_problem).sum()),
        validation_problems=int(val_problem.sum()),
        rows=len(arrays.log_time_us),
    )
    # the contract is judged on the GPU's own held-out problems: --prior-data's are another GPU's
    # times, which a model adapted from that GPU's model has already fit
    own = ~_prior_problem_mask(arrays, prior_problems)
    metadata = _metadata(model, config, arrays, val_problem, own, report, features, op_name, prior_data)
    return model.to_model_file(metadata), report


def _prior_problem_mask(arrays: TrainingArrays, prior_problems: Collection | None) -> np.ndarray:
    """bool per problem: one of ``prior_problems`` (--prior-data's, another GPU's times), not
    measured on the GPU the model is for."""
    prior = prior_problems or ()
    return np.array([problem_key(p) in prior for _, p in arrays.problems], dtype=bool)


def _metadata(
    model: Regressor | Ensemble,
    config: TrainConfig,
    arrays: TrainingArrays,
    val_problem: np.ndarray,
    own: np.ndarray,
    report: TrainReport,
    features: dict[str, Any],
    op_name: str | None,
    prior_data: dict[str, Any] | None,
) -> dict[str, Any]:
    """The model file's metadata: what it was trained on and how, and its confidence contract
    judged on the held-out problems ``val_problem`` that are the GPU's ``own``."""
    hidden_dim, num_layers = config.resolved()
    hardware = arrays.problems[0][0]
    from ..version import __version__

    summary = training_data_summary(arrays, held_out_contract(model, arrays, val_problem, own))

    return {
        "model_family": config.model_type,
        "hidden_dim": hidden_dim,
        "num_layers": num_layers,
        "target": "ln(time_us)",
        **features,
        "hardware": {**hardware.to_dict(), "hardware_id": hardware.hardware_id},
        "op": op_name,
        "training_data": summary if prior_data is None else {**summary, "prior_data": prior_data},
        "training": {**asdict(config), "report": asdict(report)},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torch_diode_version": __version__,
    }
