"""The sample a new GPU measures first (`diode sample`): the N problems of a measured GPU's data
that teach a model the most about another GPU, written as a shapeset that `diode
collect-shapeset` measures.

The design is greedy. Each candidate problem (one of the data's, held-out ones excepted) counts in
the coverage report's cells (op x dtype x layout, size regimes, the candidate kinds measured on it:
:func:`torch_diode.coverage.problem_cells`), a cell weighing the square root of its problems in the
data. At each step the problem of the largest gain joins the sample:

    gain = cover x (1/2 + 1/2 x race) x (1 - exp(-distance / DIVERSITY_SCALE))

- ``cover`` is the weight of the problem's cells that the sample lacks, while the data has a cell
  the sample lacks; then the sum over its cells of weight / (1 + the cell's problems sampled);

- ``race`` is exp(-|ln(best ATen time / best compiled time)| / RACE_SCALE) on the measured GPU,
  the ATen side being the extern choices (cuBLAS: :func:`torch_diode.features.is_aten`) and the
  compiled side every other kernel (Triton configs, decompose_k...): 1 where cuBLAS and the best
  compiled kernel tie, falling as one wins by far (0 where one side has no successful timing).
  Close races are where another GPU's winner can differ (its bandwidth, clocks, shared memory), so
  they are the measurements that move the decisions;
- ``distance`` is the Euclidean distance in log2 (B, M, N, K) to the nearest problem already
  sampled of the same op, dtype and layout: a second problem of a cell is drawn away from the first;
- a problem measured with TF32 allowed is left out, by the coverage report's rule
  (:func:`torch_diode.coverage.measured_with_tf32`: its file's recorded settings say TF32, or a
  Triton config of its allows it): a shapeset cannot ask for TF32, and the fp32 cells count the
  problems measured without it. The rule is a file's, so the data comes file by file
  (:func:`torch_diode.dataset_io.load_each`); a problem that one file measured with TF32 and
  another without is a candidate with the latter's timings.

Every cell thus gets a problem first, large cells get more after, and within a cell the sample
spreads over sizes. Ties are broken by ``seed``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..coverage import measured_with_tf32, problem_cells, settings_say_tf32
from ..dataset_io import merge_all
from ..features import is_aten
from ..types import Dataset, Problem
from .shapes import drop_heldout, problem_identity

RACE_SCALE = 0.2  # ln units: cuBLAS and the best compiled kernel within ~20% of each other are a close race
DIVERSITY_SCALE = 1.0  # log2 units: a problem twice another's size in one dimension is half new
FAR = 1e6


@dataclass(frozen=True)
class Candidate:
    problem: Problem
    cells: tuple[str, ...]
    race: float  # 1: cuBLAS and the best compiled kernel tie on the measured GPU; toward 0: far apart


def candidates(datasets: Iterable[Dataset]) -> list[Candidate]:
    """The problems a sample can hold, of ``datasets`` given one per file
    (:func:`torch_diode.dataset_io.load_each`): the files' measurements without TF32 (each file's
    :func:`without_tf32`) merged, then the problems of two or more successful timings, not held
    out; one per problem identity (strides and bias shape aside)."""
    seen: dict[Problem, Candidate] = {}
    for _, problem, timings in merge_all(without_tf32(d) for d in datasets).problems():
        ok = [t for t in timings if not t.failed]
        if len(ok) < 2:
            continue
        identity = problem_identity(problem)
        if identity in seen:
            continue
        aten = [t.time_us for t in ok if is_aten(t.config)]
        compiled = [t.time_us for t in ok if not is_aten(t.config)]
        race = math.exp(-abs(math.log(min(aten) / min(compiled))) / RACE_SCALE) if aten and compiled else 0.0
        cells = tuple(problem_cells(problem, (t.config.template_id for t in ok), False))
        seen[identity] = Candidate(identity, cells, race)
    kept = set(drop_heldout(list(seen)))
    return [c for p, c in seen.items() if p in kept]


def without_tf32(dataset: Dataset) -> Dataset:
    """``dataset`` (one file's) less its fp32 problems measured with TF32 allowed
    (:func:`torch_diode.coverage.measured_with_tf32`; TF32 changes only fp32 dots, so a half
    precision problem of a TF32 run stays)."""
    file_tf32 = settings_say_tf32(dataset)
    tf32 = {
        (hw, p)
        for hw, p, ts in dataset.problems()
        if p.dtype_a == "float32" and measured_with_tf32(file_tf32, (t for t in ts if not t.failed))
    }
    return dataset.subset(lambda hw, p: (hw, p) not in tf32) if tf32 else dataset


def design(pool: list[Candidate], n: int, seed: int = 0) -> list[Candidate]:
    """The greedy sample of ``n`` problems of ``pool`` (all of them where it holds fewer), in the
    order drawn."""
    if n < 1:
        raise ValueError(f"a sample holds at least one problem, got {n}")
    if len(pool) <= n:
        return list(pool)
    names = sorted({c for cand in pool for c in cand.cells})
    index = {name: i for i, name in enumerate(names)}
    member = np.zeros((len(pool), len(names)), dtype=np.float64)
    for row, cand in enumerate(pool):
        member[row, [index[c] for c in cand.cells]] = 1.0
    weight = np.sqrt(member.sum(axis=0))
    race = np.array([0.5 + 0.5 * c.race for c in pool])
    sizes = np.log2(np.array([[c.problem.B, c.problem.M, c.problem.N, c.problem.K] for c in pool], dtype=np.float64))
    groups = np.array(
        [hash((c.problem.op, c.problem.dtype_a, c.problem.transpose_a, c.problem.transpose_b)) for c in pool]
    )
    nearest = np.full(len(pool), FAR)
    sampled = np.zeros(len(names))
    jitter = 1.0 + 1e-9 * np.random.default_rng(seed).random(len(pool))  # ties only
    taken = np.zeros(len(pool), dtype=bool)
    order = []
    for _ in range(n):
        cover = member @ (weight * (sampled == 0))
        if not cover[~taken].any():
            cover = member @ (weight / (1.0 + sampled))
        gain = cover * race * (1.0 - np.exp(-nearest / DIVERSITY_SCALE)) * jitter
        gain[taken] = -1.0
        pick = int(np.argmax(gain))
        taken[pick] = True
        order.append(pick)
        sampled += member[pick]
        same = groups == groups[pick]
        nearest[same] = np.minimum(nearest[same], np.linalg.norm(sizes[same] - sizes[pick], axis=1))
    return [pool[i] for i in order]


def shapeset(sample: list[Candidate], name: str, source: str) -> dict:
    """The shapeset file's object: one entry per sampled problem, its layer naming its cells."""
    entries = []
    for i, cand in enumerate(sample):
        p = cand.problem
        entry = {"model": name, "layer": f"#{i} " + ", ".join(c for c in cand.cells if not c.startswith("candidate/"))}
        entry.update(op=p.op, B=p.B, M=p.M, N=p.N, K=p.K, transpose_a=p.transpose_a, transpose_b=p.transpose_b)
        if p.dtype_a == p.dtype_b == p.dtype_out:
            entry["dtype"] = p.dtype_a
        else:
            entry.update(dtype_a=p.dtype_a, dtype_b=p.dtype_b, dtype_out=p.dtype_out)
        entries.append(entry)
    description = (
        f"The {len(sample)} problems of {source} that `diode sample` chose for a new GPU to measure "
        "(torch_diode.collection.design: every coverage cell first, close races between cuBLAS and compiled "
        "kernels, spread over sizes)."
    )
    return {"name": name, "description": description, "entries": entries}


def shapeset_bytes(sample: list[Candidate], name: str, source: str) -> bytes:
    return (json.dumps(shapeset(sample, name, source), indent=1) + "\n").encode()
