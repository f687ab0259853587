"""Inductor's GEMM candidates for the choice handler: which template diode may enumerate itself,
a probe candidate to put enumerated configs into, and KernelTemplateChoices for wanted configs.

Inductor calls ``_finalize_template_configs`` with lazy generators of every candidate
(KernelTemplateChoice) before any kernel is generated. Where it can (a static K, Inductor's
stock config settings, Inductor's heuristic for the template holding the CUDA config lists diode
reads), diode enumerates the Triton mm/bmm template's candidates itself
(:mod:`.config_space`: Inductor's lists, scaled and pruned by Inductor's rules, the same configs
the training data was measured with) instead of letting Inductor's generator build every
KernelTemplateChoice, whose per-candidate work (a sympy EVEN_K check, dataclass copies) costs
more than the whole decision (even its first candidate: Inductor scales the whole list before
yielding one). The chosen configs become KernelTemplateChoices as Inductor's lookup table builds
them: a probe candidate of the template (the first of a generator Inductor makes for its DEFAULT
list, which must equal diode's first DEFAULT config) with the config's parameters put in; each must
convert back to its config. Other templates' candidates (ATen...) are Inductor's own.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from ..types import KernelConfig, Problem
from .config_space import raw_config_lists, rows_of, template_id, triton_candidates
from .convert import ktc_config, ktc_with_config

logger = logging.getLogger(__name__)


@contextmanager
def search_space(pool: str) -> Iterator[None]:
    """Inductor's GEMM search space (DEFAULT or EXHAUSTIVE) for the block."""
    from torch._inductor import config as inductor_config

    with inductor_config.patch(max_autotune_gemm_search_space=pool):
        yield


def device_of(kernel_inputs: Any) -> Any:
    """The device of a GEMM's kernel inputs."""
    return kernel_inputs.nodes()[-1].get_device()


def template_uids(templates: list) -> tuple[str, ...]:
    return tuple(sorted(str(getattr(t, "uid", None) or type(t).__name__) for t in templates))


def enumerable_uid(
    problem: Problem, kernel_inputs: Any, template_choices: dict, kwarg_overrides: dict | None
) -> str | None:
    """The Triton template whose candidates diode can enumerate for this problem, or None: K is
    static (EVEN_K is then K % BLOCK_K == 0; M and N may be symbolic, Inductor scaling the configs
    to their hints, which ``problem`` holds) and Inductor's config generation runs with its stock
    settings."""
    from torch._inductor import config as inductor_config

    try:
        uid = template_id(problem)
        if uid not in template_choices or (kwarg_overrides or {}).get(uid):
            return None
        if (
            getattr(inductor_config, "multi_kernel_hints", None)
            or getattr(getattr(inductor_config, "test_configs", None), "max_mm_configs", None) is not None
            or getattr(inductor_config, "max_autotune_prune_choices_based_on_shared_mem", False)
        ):
            return None
        k = kernel_inputs.mnk_symbolic()[2]
        return uid if isinstance(k, int) or getattr(k, "is_Integer", False) else None
    except Exception:  # anything unexpected: Inductor's generators produce the pool
        return None


class Replayable:
    """A GEMM's candidate generators (``template_choices``) keeping what is taken from them, so
    that every candidate can still be handed to Inductor, in order, after diode's paths took some
    and failed (a fallback)."""

    def __init__(self, template_choices: dict):
        self._iterators = {uid: iter(gen) for uid, gen in template_choices.items()}
        self._taken: dict[Any, list] = {uid: [] for uid in self._iterators}

    def _recording(self, uid: Any) -> Iterator[Any]:
        for ktc in self._iterators[uid]:
            self._taken[uid].append(ktc)
            yield ktc

    def generators(self) -> dict:
        """Generators of every candidate, in order: those taken so far, then the rest."""
        return {uid: itertools.chain(list(self._taken[uid]), self._recording(uid)) for uid in self._iterators}


@cache
def same_config_lists(uid: str, device_type: str, op_name: str) -> bool:
    """Whether Inductor's heuristic for this template holds the config lists diode enumerates
    (``config_space.raw_config_lists``: CUDA's)."""
    try:
        from torch._inductor.template_heuristics.registry import get_template_heuristic

        heuristic = get_template_heuristic(uid, device_type, op_name)
        lists = raw_config_lists()
        return (
            rows_of(heuristic.mm_configs) == lists["DEFAULT"]
            and rows_of(heuristic.exhaustive_configs) == lists["EXHAUSTIVE"]
        )
    except Exception as e:  # another torch's layout: Inductor's generators produce the pool
        logger.debug("torch-diode: cannot compare %s's config lists (%s)", uid, e)
        return False


def probe(
    get_ktc: Callable[..., Any], problem: Problem, kernel_inputs: Any, templates: list, uid: str, op_name: str
) -> Any:
    """A KernelTemplateChoice of template ``uid`` to put chosen configs into: the first candidate
    of a generator Inductor makes (``get_ktc``: the handler's) for its DEFAULT list, a short list
    to scale. None unless it converts to diode's first DEFAULT config (what diode enumerates must
    be what Inductor would generate), whose ALLOW_TF32 is read off it: Inductor sets it for the
    problem, by a rule that differs between torch versions and holds for symbolic sizes only
    where it holds at every size."""
    template = next((t for t in templates if getattr(t, "uid", None) == uid), None)
    if template is None or not same_config_lists(uid, kernel_inputs.device_type, op_name):
        return None
    with search_space("DEFAULT"):
        first = next(iter(get_ktc(kernel_inputs, template, op_name, {})), None)
    if first is None:
        return None
    expected, expected_config = triton_candidates(problem, "DEFAULT", ktc_config(first).allow_tf32)
    if not len(expected) or ktc_config(first) != expected_config(0):
        logger.debug(
            "torch-diode: Inductor's first %s candidate is not diode's first config for %s", uid, problem.short()
        )
        return None
    return first


def materialise(
    wanted: list[KernelConfig],
    template_choices: dict,
    enumerable: str | None,
    make_probe: Callable[[], Any] | None = None,
    static_k: int = 0,
) -> tuple[list | None, dict]:
    """KernelTemplateChoices for ``wanted`` configs, in order: those of the ``enumerable``
    template built from ``make_probe()`` (see :func:`probe`), the others found in their template's
    generator, consumed only as far as needed. None if one is missing; the generators come back
    with what was taken from them in front."""
    iterators = {uid: iter(gen) for uid, gen in template_choices.items()}
    taken: dict[Any, list] = {uid: [] for uid in iterators}

    def restored() -> dict:
        return {uid: itertools.chain(taken[uid], it) for uid, it in iterators.items()}

    def candidate(uid: Any, want: KernelConfig) -> Any:
        found = next((k for k in taken[uid] if ktc_config(k) == want), None)
        while found is None:
            ktc = next(iterators[uid], None)
            if ktc is None:
                return None
            taken[uid].append(ktc)
            if ktc_config(ktc) == want:
                found = ktc
        return found

    out = []
    base = None
    try:
        for want in wanted:
            uid = want.template_id
            if uid not in iterators:
                return None, restored()
            if uid == enumerable and want.is_tiled and (base := base or make_probe()) is not None:
                # EVEN_K as this graph's static K makes it: a config whose EVEN_K another K gave
                # (a cached decision of other sizes) is not this graph's kernel
                ktc = ktc_with_config(base, want) if want.even_k == (static_k % want.block_k == 0) else None
            else:
                ktc = candidate(uid, want)
            if ktc is None:
                return None, restored()
            out.append(ktc)
    except Exception:  # a conversion failing: the full path decides, and reports what fails
        return None, restored()
    return out, restored()
