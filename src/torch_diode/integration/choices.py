"""DiodeInductorChoices: the model chooses GEMM kernels inside torch.compile.

Inductor calls ``_finalize_template_configs`` with lazy generators of every candidate
(KernelTemplateChoice) before any kernel is generated. The candidate pool is
``config.candidate_pool`` (EXHAUSTIVE by default, so the model can pick kernels stock
max-autotune never tries), every candidate a KernelConfig exactly as the recorder converts it,
all of them ranked in one C++ call. Where it can, diode enumerates the Triton mm/bmm template's
candidates itself instead of letting Inductor's generator build them all
(:mod:`torch_diode.inductor.candidates`); a repeated problem's decision is cached.

The decision is :func:`torch_diode.selection.decide` (its module states the rules: usable
candidates, extern preference, top-k and threshold, the unsure rule and its widening), with the
settings of ``torch_diode.config`` and the confidence contract the model's training recorded
(:class:`torch_diode.selection.Confidence`).

Fallback (the stock list, counted by reason in ``get_stats()``): no model for this hardware, an op
or dtype the model does not cover, sizes without hints, any error in features or inference. With
``enable_fallback=False`` errors raise instead. The returned list is never empty.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import time
from collections import OrderedDict
from typing import Any

import numpy as np
from torch._inductor.choices import InductorChoices

from .. import config
from ..features import Candidates, config_rows, featurize_rows
from ..hardware import detect_hardware
from ..inductor.candidates import (
    device_of,
    enumerable_uid,
    materialise,
    probe,
    search_space,
    template_uids,
)
from ..inductor.config_space import beyond_default_list, tf32_enabled, triton_candidates
from ..inductor.convert import ktc_config, ktc_with_config, problem_from_nodes
from ..selection import Confidence, Decision, NoUsableCandidate, Policy, Pool, decide
from ..types import Hardware, KernelConfig, Problem
from .stats import PROCESS_STATS, Stats, get_prediction_stats, profile_predictions

logger = logging.getLogger(__name__)

SUPPORTED_OPS = ("mm", "addmm", "bmm", "baddbmm")
SUPPORTED_DTYPES = ("float16", "bfloat16", "float32")
_CACHE_SIZE = 4096


class Fallback(Exception):
    """Diode does not decide this GEMM; ``reason`` is counted in the stats."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class DiodeInductorChoices(InductorChoices):
    """An InductorChoices that ranks GEMM candidates with a torch-diode model."""

    def __init__(self, model_path: str | os.PathLike | None = None, device: str = "cpu", top_k_configs: int | None = None,
                 performance_threshold: float | None = None, enable_fallback: bool | None = None):
        super().__init__()
        import json

        from ..predict import load_model
        from ..registry import resolve_model

        self.model_path = str(resolve_model(model_path)) if model_path is not None else None
        self.device = device  # where the model runs: the C++ engine runs on the CPU
        self.top_k_configs = top_k_configs
        self.performance_threshold = performance_threshold
        self.enable_fallback = enable_fallback
        self.engine = load_model(self.model_path) if self.model_path else None
        self.metadata = json.loads(self.engine.metadata_json) if self.engine is not None else {}
        self._hardware_ok: dict[str, bool] = {}
        self._hardware: dict[str, Hardware] = {}
        # decision cache: key -> (the chosen configs, how many candidates there were)
        self._cache: OrderedDict[tuple, tuple[list[KernelConfig], int]] = OrderedDict()
        self.stats = Stats(parent=PROCESS_STATS)
        digest = hashlib.sha256(open(self.model_path, "rb").read()).hexdigest()[:16] if self.model_path else "none"
        self._uuid = f"torch-diode:{digest}"

    # Inductor's FX-graph cache key includes this: a different model or settings, another key.
    def uuid(self) -> str:
        return f"{self._uuid}:{sorted(config.snapshot().items())}:{self.top_k_configs}:{self.performance_threshold}"

    # ----- settings and statistics ----------------------------------------------------------------
    def _setting(self, name: str) -> Any:
        own = getattr(self, name, None)
        return own if own is not None else getattr(config, name)

    def policy(self) -> Policy:
        """The selection policy now: ``torch_diode.config`` with this handler's own settings."""
        return Policy.from_config(self.top_k_configs, self.performance_threshold)

    def contract(self) -> Confidence:
        """The confidence contract the model's training recorded (read from its metadata)."""
        return Confidence.from_dict(self.metadata.get("training_data"))

    @property
    def decisions(self):
        """The latest decisions, for reports: problem, chosen candidates and their predicted time."""
        return self.stats.decisions

    def get_stats(self) -> dict[str, Any]:
        return self.stats.handler_report()

    def reset_stats(self) -> None:
        self.stats.reset()

    # ----- the hook -------------------------------------------------------------------------------
    def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        if op_name not in SUPPORTED_OPS:
            self.stats.count("not_gemm")
            return super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        self.stats.count("total_calls")
        start = time.perf_counter()
        try:
            return self._finalize(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        finally:
            self.stats.timed(time.perf_counter() - start)

    def _finalize(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides):
        # the problem, built once for every path (None where it cannot be: the full path reports why)
        try:
            problem, problem_error = problem_from_nodes(op_name, kernel_inputs.nodes(), kernel_inputs.out_dtype(), require_hints=True), None
        except Exception as e:
            problem, problem_error = None, e
        pool = self._setting_pool()
        with search_space(pool):
            if problem is not None:
                chosen, template_choices = self._from_cache(problem, template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
                if chosen is not None:
                    return chosen
                chosen, template_choices = self._from_enumeration(problem, template_choices, kernel_inputs, templates, op_name,
                                                                  kwarg_overrides)
                if chosen is not None:
                    return chosen
            stock = super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        if not stock:
            return stock
        try:
            chosen = self._choose(stock, problem, problem_error, kernel_inputs, op_name, templates)
        except Exception as e:
            self.stats.fallback(e.reason if isinstance(e, Fallback) else f"error_{type(e).__name__}")
            if not self._setting("enable_fallback") and not isinstance(e, Fallback):
                raise
            logger.debug("torch-diode: stock choices for %s (%s)", op_name, e)
            return stock
        self.stats.count("model_selections")
        self.stats.count("configs_filtered", len(stock) - len(chosen))
        return chosen

    def _cache_key(self, problem: Problem, kernel_inputs: Any, templates: list, op_name: str) -> tuple:
        """What a decision depends on, known before any candidate is generated."""
        return (problem, str(device_of(kernel_inputs)), op_name, template_uids(templates), config.allow_hardware_mismatch,
                self._setting_pool(), self.policy(), tf32_enabled())

    def _enumerable(self, problem: Problem, kernel_inputs: Any, template_choices: dict, kwarg_overrides: dict | None) -> str | None:
        """The Triton template diode enumerates itself for this problem (its own enumeration on),
        or None."""
        if not config.enumerate_candidates:
            return None
        return enumerable_uid(problem, kernel_inputs, template_choices, kwarg_overrides)

    def _from_cache(self, problem: Problem, template_choices: dict, kernel_inputs: Any, templates: list, op_name: str,
                    kwarg_overrides: dict | None) -> tuple[list | None, dict]:
        """A repeated problem's decision without generating its whole candidate pool (the same GEMM
        in every layer of a model is decided once): the cached configs are materialised. If one is
        not among the candidates, the generators, with what was taken from them put back in front,
        go on to a new decision."""
        if not self._setting("cache_predictions") or self.engine is None:
            return None, template_choices
        try:
            key = self._cache_key(problem, kernel_inputs, templates, op_name)
        except Exception:  # the full path decides (and reports what fails)
            return None, template_choices
        entry = self._cache.get(key)
        if entry is None:
            return None, template_choices
        configs, num_candidates = entry
        enumerable = self._enumerable(problem, kernel_inputs, template_choices, kwarg_overrides)
        make_probe = (lambda: probe(self.get_ktc, problem, kernel_inputs, templates, enumerable, op_name)) if enumerable else None
        chosen, template_choices = materialise(configs, template_choices, enumerable, make_probe, problem.K)
        if chosen is None:
            self.stats.count("cache_stale")
            return None, template_choices
        self._cache.move_to_end(key)
        self.stats.count("cache_hits")
        self.stats.count("model_selections")
        self.stats.count("configs_filtered", num_candidates - len(chosen))
        return chosen, template_choices

    def _from_enumeration(self, problem: Problem, template_choices: dict, kernel_inputs: Any, templates: list, op_name: str,
                          kwarg_overrides: dict | None) -> tuple[list | None, dict]:
        """The decision with the Triton template's candidates enumerated by diode. None where it
        does not apply, the full path then deciding (and reporting any fallback): the generators
        come back with what was taken from them in front."""
        if self.engine is None:
            return None, template_choices
        try:
            uid = self._enumerable(problem, kernel_inputs, template_choices, kwarg_overrides)
            if uid is None:
                return None, template_choices
            self._check_covered(problem, kernel_inputs, op_name)
        except Exception:
            return None, template_choices
        lists: dict[Any, list] = {}

        def restored() -> dict:
            return {u: iter(lists[u]) if u in lists else g for u, g in template_choices.items()}

        try:
            base = probe(self.get_ktc, problem, kernel_inputs, templates, uid, op_name)
            if base is None:
                self.stats.count("enumeration_mismatch")
                return None, template_choices
            parts, owners = [], []  # owners: the template's KernelTemplateChoices, None for diode's own
            for u, gen in template_choices.items():
                if u == uid:
                    parts.append(triton_candidates(problem, self._setting_pool()))
                    owners.append(None)
                else:
                    lists[u] = list(gen)
                    configs = [ktc_config(k) for k in lists[u]]
                    parts.append((config_rows(configs), configs.__getitem__))
                    owners.append(lists[u])
            candidates = Candidates(parts)
            indices, commit = self._decide(problem, candidates, kernel_inputs)
            chosen = []
            for i in indices:
                part, j = candidates.locate(i)
                chosen.append(owners[part][j] if owners[part] is not None else ktc_with_config(base, candidates.config(i)))
            if any(k is None for k in chosen):  # an enumerated config Inductor's template does not reproduce
                self.stats.count("enumeration_mismatch")
                return None, restored()
            self._remember(problem, kernel_inputs, templates, op_name, [candidates.config(i) for i in indices], len(candidates))
        except Exception as e:  # the full path decides again and reports the failure as its own
            logger.debug("torch-diode: enumeration of %s failed (%s)", op_name, e)
            return None, restored()
        commit()
        self.stats.count("enumerated")
        self.stats.count("model_selections")
        self.stats.count("configs_filtered", len(candidates) - len(chosen))
        return chosen, restored()

    def _setting_pool(self) -> str:
        pool = config.candidate_pool
        return pool if pool in ("DEFAULT", "EXHAUSTIVE") else "EXHAUSTIVE"

    def _hardware_for(self, kernel_inputs: Any) -> Hardware:
        device = device_of(kernel_inputs)
        key = str(device)
        if key not in self._hardware:
            self._hardware[key] = detect_hardware(device)
        return self._hardware[key]

    def _check_covered(self, problem: Problem, kernel_inputs: Any, op_name: str) -> None:
        """Raises Fallback where the model does not decide this problem."""
        if self.engine is None:
            raise Fallback("no_model")
        hardware = self._hardware_for(kernel_inputs)
        if not self._hardware_matches(hardware):
            raise Fallback("no_model_for_hardware", hardware.device_name)
        if problem.dtype_a not in SUPPORTED_DTYPES:
            raise Fallback("unsupported_dtype", problem.dtype_a)
        model_op = self.metadata.get("op")
        if model_op and model_op != op_name:
            raise Fallback("unsupported_op", op_name)

    def _choose(self, stock: list, problem: Problem | None, problem_error: Exception | None, kernel_inputs: Any, op_name: str,
                templates: list) -> list:
        if self.engine is None:
            raise Fallback("no_model")
        if problem is None:
            if isinstance(problem_error, LookupError):
                raise Fallback("symbolic_sizes_without_hints", str(problem_error)) from None
            raise problem_error
        self._check_covered(problem, kernel_inputs, op_name)
        configs = [ktc_config(k) for k in stock]
        indices, commit = self._decide(problem, Candidates.of(configs), kernel_inputs)
        commit()
        self._remember(problem, kernel_inputs, templates, op_name, [configs[i] for i in indices], len(stock))
        return [stock[i] for i in indices]

    def _decide(self, problem: Problem, candidates: Candidates, kernel_inputs: Any) -> tuple[list[int], Any]:
        """Indices of the chosen configs, best first, and a function that records the decision
        (statistics, ``decisions``): called once the decision is used, so that a decision the
        enumerated path gives up is not counted twice."""
        try:
            features = featurize_rows(problem, candidates.rows, self._hardware_for(kernel_inputs))
        except Exception as e:
            raise Fallback("feature_error", str(e)) from None
        try:  # every ensemble member's ln time ([K, N]): their mean ranks, their spread is the risk
            members = np.asarray(self.engine.predict_members(features), dtype=np.float64)
        except Exception as e:
            raise Fallback("inference_error", str(e)) from None
        if not np.all(np.isfinite(members)):
            raise Fallback("inference_error", "non-finite prediction")
        predicted = members.mean(axis=0)
        decision = self._select(members, features, problem, candidates)
        logger.debug("torch-diode: %s -> %d of %d candidates (confidence %.3f)", problem.short(), len(decision.chosen),
                     len(predicted), decision.confidence)
        indices = list(decision.chosen)

        def commit() -> None:
            self.stats.add(decision.notes())
            self.stats.decided(decision.confidence, len(predicted), {
                "problem": problem.short(), "candidates": len(candidates), "chosen": [candidates.config(i).short() for i in indices],
                "predicted_us": [round(math.exp(predicted[i]), 2) for i in indices]})

        return indices, commit

    def _select(self, predicted: np.ndarray, features: np.ndarray, problem: Problem, candidates: Candidates) -> Decision:
        """The decision on the model's ``predicted`` ln times, [N] or per member [K, N]
        (:func:`torch_diode.selection.decide`)."""
        pool = Pool(features, candidates.extern, lambda: beyond_default_list(problem, candidates.rows))
        try:
            contract = self.contract()
        except ValueError as e:
            raise Fallback("contract_error", str(e)) from None
        try:
            return decide(problem, pool, predicted, self.policy(), contract, tf32_enabled())
        except NoUsableCandidate:
            raise Fallback("no_usable_candidate") from None

    def _remember(self, problem: Problem, kernel_inputs: Any, templates: list, op_name: str, chosen: list[KernelConfig],
                  num_candidates: int) -> None:
        if self._setting("cache_predictions"):
            self._cache[self._cache_key(problem, kernel_inputs, templates, op_name)] = (chosen, num_candidates)
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)

    def _hardware_matches(self, hardware: Hardware) -> bool:
        if config.allow_hardware_mismatch:
            return True
        if hardware.device_name not in self._hardware_ok:
            trained = (self.metadata.get("hardware") or {}).get("device_name")
            self._hardware_ok[hardware.device_name] = trained is not None and Hardware(
                trained, None, 1, 0, 1, "").hardware_id == hardware.hardware_id
        return self._hardware_ok[hardware.device_name]


__all__ = ["DiodeInductorChoices", "Fallback", "get_prediction_stats", "profile_predictions"]
