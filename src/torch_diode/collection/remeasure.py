"""Measuring a dataset file's problems again as its collection did (`diode remeasure`): whether
there is anything to measure, which of its problems (``--only``, ``--below-us``,
``--layout-hinted``), and the collection options its recorded settings give
(:func:`.provenance.measurement_settings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dataset_tools import best_configs
from ..types import Dataset, Problem, problem_key
from .provenance import hinted_already, led_already


def ran_under(dataset: Dataset, time_us: float) -> set[str]:
    """The problems (keys, as `diode dataset merge --replace` replaces them) of ``dataset`` whose
    fastest recorded time is under ``time_us``; a problem whose choices all failed has none."""
    return {problem_key(p) for _, p, best, _, _ in best_configs(dataset) if best.time_us < time_us}


def measured_already(source: Dataset, layout_hinted: bool, without_lead: bool, below_us: float | None) -> str | None:
    """Why ``source`` needs no re-measurement with the hints (``layout_hinted``) or the lead
    (``without_lead``): its problems were measured so (provenance); None where it does."""
    if layout_hinted and hinted_already(source):
        return "its problems were measured with the layout hints"
    if without_lead and led_already(source, below_us):
        return "its problems were timed with the collector's lead (or by Inductor's own benchmark, which takes none)"
    return None


@dataclass
class Selection:
    """The problems of a file to measure again, and what the re-measurement's record says of
    how they were chosen (``only``, ``below_us``: where these left a problem out). ``nothing``
    says why none is measured (then ``problems`` is empty)."""

    problems: list[Problem]
    narrowed: dict[str, Any] = field(default_factory=dict)
    nothing: str | None = None


def select_problems(
    source: Dataset, only: Sequence[str] | None = None, below_us: float | None = None, layout_hinted: bool = False
) -> Selection:
    """``source``'s problems that the datasets or shapesets ``only`` also hold, whose fastest
    recorded time is under ``below_us``, and whose kernels get layout hints (``layout_hinted``),
    as far as each is given."""
    from .kernel_spec import layout_hinted as gets_hints
    from .shapes import held_keys

    problems = [p for _, p, _ in source.problems()]
    if not problems:  # a collection's placeholder chunk, say, of shapes not yet measured
        return Selection([], nothing="it holds no problem")
    narrowed: dict[str, Any] = {}
    if only:  # before the hints, which build (meta) tensors
        keys = held_keys(only)
        kept = [p for p in problems if problem_key(p) in keys]
        if not kept:
            return Selection([], nothing=f"none of its problems is in {' '.join(only)}")
        if len(kept) < len(problems):
            narrowed["only"] = list(only)
        problems = kept
    if below_us is not None:
        short = ran_under(source, below_us)
        kept = [p for p in problems if problem_key(p) in short]
        if not kept:
            return Selection([], nothing=f"none of its problems ran under {below_us:g} us")
        if len(kept) < len(problems):
            narrowed["below_us"] = below_us
        problems = kept
    if layout_hinted:
        problems = [p for p in problems if gets_hints(p)]
        if not problems:
            which = f"problems in {' '.join(only)}" if only else f"{source.num_problems} problems"
            return Selection([], nothing=f"none of its {which} gets a layout hint")
    return Selection(problems, narrowed)


def collection_options(settings: dict) -> dict[str, Any]:
    """The `diode collect` options (argument names) that measure as the recorded ``settings``
    (:func:`.provenance.measurement_settings`) say: the mode, the fast mode's sample, seed,
    repetitions and ints held as constants or Inductor's search space and backends, and the TF32
    setting."""
    mode = "fast" if settings["mode"] == "fast" else "max-autotune"
    options: dict[str, Any] = {"search_mode": mode}
    if mode == "fast":
        options.update(
            exhaustive_sample=settings["exhaustive_sample"],
            seed=settings["seed"],
            reps=settings["reps"],
            exhaustive_rotations=settings["exhaustive_rotations"],
        )
    else:
        options.update(
            search_space=settings["max_autotune_gemm_search_space"] or "DEFAULT",
            backends=settings["max_autotune_gemm_backends"] or "ATEN,TRITON",
        )
    options["float32_matmul_precision"] = "high" if settings["tf32"] else "highest"
    options["constant_ints"] = settings["constant_ints"]  # none in Inductor's mode, which takes none
    return options


def offer_persistent_tma(settings: dict) -> None:
    """Has Inductor offer the persistent TMA template where the recorded collection had it
    offered (its configs were timed then), and not elsewhere."""
    from torch._inductor import config as inductor_config

    inductor_config.triton.enable_persistent_tma_matmul = bool(settings["persistent_tma"])


__all__ = [
    "Selection",
    "collection_options",
    "measured_already",
    "offer_persistent_tma",
    "ran_under",
    "select_problems",
]
