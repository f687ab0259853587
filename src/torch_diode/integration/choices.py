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
or dtype the model does not cover, sizes without hints, a prediction that is not a finite ln-time
(``bad_prediction``), any error in features or inference, and any exception anywhere in diode's
paths (cache, enumeration, widening, materialising the chosen candidates, statistics:
``error_<ExceptionType>``): Inductor gets its stock candidates, generated again in the user's
own search space (``max_autotune_gemm_search_space``, not diode's pool), as without diode.
With ``enable_fallback=False`` errors raise instead. Errors of Inductor's own candidate generation
are Inductor's and propagate. The returned list is never empty.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import OrderedDict
from typing import Any

import numpy as np
from torch._inductor.choices import InductorChoices

from .. import config
from ..features import Candidates, config_rows, featurize_rows, is_aten
from ..hardware import detect_hardware, hardware_match
from ..inductor import settings as inductor_settings
from ..inductor.candidates import (
    Replayable,
    device_of,
    enumerable_uid,
    materialise,
    probe,
    search_space,
    template_uids,
)
from ..inductor.config_space import decision_pool, tf32_enabled, triton_candidates, with_aten_tf32
from ..inductor.convert import DynamicSizes, dynamic_sizes, ktc_config, ktc_with_config, problem_from_nodes
from ..selection import Confidence, Decision, NoUsableCandidate, Policy, decide, decide_range, judged_over_range
from ..types import OPS, Hardware, KernelConfig, Problem
from ..version import __version__
from .fallback import Fallback, FellBack, PassThrough
from .stats import PROCESS_STATS, Stats

logger = logging.getLogger(__name__)

SUPPORTED_OPS = OPS
SUPPORTED_DTYPES = ("float16", "bfloat16", "float32")
_CACHE_SIZE = 4096
# predicted ln(time_us) beyond this magnitude is no time: exp() of it overflows or vanishes in float64
MAX_ABS_LN_TIME_US = 700.0


class DiodeInductorChoices(InductorChoices):
    """An InductorChoices that ranks GEMM candidates with a torch-diode model."""

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        device: str = "cpu",
        top_k_configs: int | None = None,
        performance_threshold: float | None = None,
        enable_fallback: bool | None = None,
    ):
        super().__init__()
        from ..config import _warn as warn
        from ..errors import one_line
        from ..model_file import _metadata as model_metadata_of
        from ..registry import detect_model, load_model_and_checksum, resolve_model

        self.device = device  # where the model runs: the C++ engine runs on the CPU
        self.top_k_configs = top_k_configs
        self.performance_threshold = performance_threshold
        self.enable_fallback = enable_fallback
        # None: the model for the current GPU (exact or of its family), if any. A model that cannot
        # be loaded leaves Inductor's stock choices (logged; counted per GEMM as model_load_error).
        # The engine comes with the checksum of the bytes it was built from (the cache key's model identity).
        self.model_path, self.engine, self.checksum, self.load_error = None, None, None, None
        self.metadata: dict[str, Any] = {}
        try:
            self.model_path = str(resolve_model(model_path) if model_path is not None else detect_model() or "") or None
            if self.model_path:
                self.engine, self.checksum = load_model_and_checksum(self.model_path)
                self.metadata = model_metadata_of(self.engine, self.model_path)
        except (OSError, ValueError) as e:  # missing file or name, ModelFormatError (a ValueError)
            if not self._setting("enable_fallback"):
                raise
            self.model_path, self.engine, self.checksum, self.metadata = None, None, None, {}
            self.load_error = f"{type(e).__name__}: {one_line(str(e))}"
            warn(
                f"torch-diode: model {one_line(str(model_path))} cannot be loaded ({self.load_error}); "
                "Inductor keeps its stock choices"
            )
        self._hardware_ok: dict[str, str | None] = {}  # device name -> "exact", "family" or None
        self._hardware: dict[str, Hardware] = {}
        self._family_hardware = False  # the GPU being decided for is another SKU of the model's
        # decision cache: key -> (the chosen configs, how many candidates there were)
        self._cache: OrderedDict[tuple, tuple[list[KernelConfig], int]] = OrderedDict()
        self.stats = Stats(parent=PROCESS_STATS)

    def uuid(self) -> str:
        """Inductor's FX-graph cache key includes this (:mod:`torch_diode.inductor.hooks`): another
        model (by content), diode version or setting gives another key."""
        own = (self.top_k_configs, self.performance_threshold, self.enable_fallback)
        return f"torch-diode-{__version__}:{self.checksum or 'no-model'}:{sorted(config.snapshot().items())}:{own}"

    # ----- settings and statistics ----------------------------------------------------------------
    def _setting(self, name: str) -> Any:
        own = getattr(self, name, None)
        return own if own is not None else getattr(config, name)

    def policy(self) -> Policy:
        """The selection policy now: ``torch_diode.config`` with this handler's own settings."""
        return Policy.from_config(self.top_k_configs, self.performance_threshold)

    def contract(self) -> Confidence:
        """The confidence contract the model's training recorded (read from its metadata once per
        metadata record: every decision asks for it)."""
        recorded = self.metadata.get("training_data")
        cached = getattr(self, "_contract_of", None)
        if cached is None or cached[0] is not recorded:
            cached = self._contract_of = (recorded, Confidence.from_dict(recorded))
        return cached[1]

    def _checked_contract(self) -> Confidence:
        try:
            return self.contract()
        except ValueError as e:
            raise Fallback("contract_error", str(e), error=True) from None

    @property
    def decisions(self):
        """The latest decisions, for reports: problem, chosen candidates and their predicted time."""
        return self.stats.decisions

    def get_stats(self) -> dict[str, Any]:
        return {**self.stats.handler_report(), "model_load_error": self.load_error}

    def reset_stats(self) -> None:
        self.stats.reset()

    # ----- the hook -------------------------------------------------------------------------------
    def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        if op_name not in SUPPORTED_OPS:
            self.stats.count("not_gemm")
            return super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )
        # Inductor's diode_* / fast_autotune settings, where set, for this decision
        with config.patch(**inductor_settings.decision_settings()):
            if not config.fast_autotune:  # Inductor autotunes its stock candidates
                self.stats.count("fast_autotune_off")
                return super()._finalize_template_configs(
                    template_choices, kernel_inputs, templates, op_name, kwarg_overrides
                )
            start = time.perf_counter()
            generators = Replayable(template_choices)
            pool = self._setting_pool()
            try:
                self.stats.count("total_calls")
                try:
                    with search_space(pool):
                        return self._finalize(
                            generators.generators(), kernel_inputs, templates, op_name, kwarg_overrides
                        )
                except PassThrough as e:
                    raise e.error from None
                except FellBack:
                    pass
                except Exception as e:
                    if not self._fall_back(e, op_name):
                        raise
                stock = super()._finalize_template_configs(
                    self._stock_generators(generators, kernel_inputs, templates, op_name, kwarg_overrides),
                    kernel_inputs,
                    templates,
                    op_name,
                    kwarg_overrides,
                )
                return stock if config.fallback_to_autotune else self._without_autotune(stock)
            finally:
                self.stats.timed(time.perf_counter() - start)

    def _stock_generators(
        self, generators: Replayable, kernel_inputs: Any, templates: list, op_name: str, kwarg_overrides: dict | None
    ) -> dict:
        """Stock behaviour's candidates: generated again in the user's search space (diode's
        ``config.candidate_pool`` generated those it took, EXHAUSTIVE by default, thousands to benchmark);
        where that fails, every candidate diode took and the rest."""
        try:
            overrides = kwarg_overrides or {}
            return {t.uid: self.get_ktc(kernel_inputs, t, op_name, overrides.get(t.uid, {})) for t in templates}
        except Exception as e:
            logger.debug("torch-diode: stock candidates of %s generated again failed (%s)", op_name, e)
            return generators.generators()

    def _fall_back(self, error: Exception, op_name: str) -> bool:
        """Counts a fallback by reason; False where the error must raise (``enable_fallback`` off)."""
        self.stats.fallback(error.reason if isinstance(error, Fallback) else f"error_{type(error).__name__}")
        if (not isinstance(error, Fallback) or error.error) and not self._setting("enable_fallback"):
            return False
        logger.debug("torch-diode: stock choices for %s (%s: %s)", op_name, type(error).__name__, error)
        return True

    def _stock(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides) -> list:
        """Inductor's own list of every candidate."""
        try:
            return super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )
        except Exception as e:
            raise PassThrough(e) from e

    def _finalize(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides):
        # the problem, built once for every path (None where it cannot be: the full path reports why)
        dynamic = None
        try:
            problem, problem_error = (
                problem_from_nodes(op_name, kernel_inputs.nodes(), kernel_inputs.out_dtype(), require_hints=True),
                None,
            )
            if config.dynamic_decisions:  # symbolic sizes: the scenarios their range is decided over
                dynamic = dynamic_sizes(op_name, kernel_inputs.nodes(), kernel_inputs.out_dtype(), config.dynamic_sizes)
        except Exception as e:
            problem, problem_error = None, e
        if problem is not None:
            if templates:  # the one coverage check, before any candidate is generated (no templates: none)
                self._check_covered(problem, kernel_inputs, op_name)
            chosen, template_choices = self._from_cache(
                problem, template_choices, kernel_inputs, templates, op_name, kwarg_overrides, dynamic
            )
            if chosen is not None:
                return chosen
            chosen, template_choices = self._from_enumeration(
                problem, template_choices, kernel_inputs, templates, op_name, kwarg_overrides, dynamic
            )
            if chosen is not None:
                return chosen
        stock = self._stock(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        if not stock:  # e.g. addmm's Triton templates, asked for apart from its ATen choices, on a CPU
            self.stats.count("no_candidates")
            return stock
        try:
            chosen = self._choose(stock, problem, problem_error, kernel_inputs, op_name, templates, dynamic)
        except Exception as e:
            if not self._fall_back(e, op_name):
                raise PassThrough(e) from e
            raise FellBack from e
        self.stats.count("model_selections")
        self.stats.count("configs_filtered", len(stock) - len(chosen))
        return chosen

    def _without_autotune(self, stock: list) -> list:
        """``fallback_to_autotune`` off: the first ATen choice alone, default mode's kernel, nothing
        benchmarked (the stock list where it holds none)."""
        for ktc in stock:
            try:
                if is_aten(ktc_config(ktc)):
                    return [ktc]
            except Exception:
                continue
        return stock

    def _cache_key(
        self, problem: Problem, kernel_inputs: Any, templates: list, op_name: str, dynamic: DynamicSizes | None = None
    ) -> tuple:
        """What a decision depends on, known before any candidate is generated."""
        return (
            problem,
            None if dynamic is None else dynamic.key,
            str(device_of(kernel_inputs)),
            op_name,
            template_uids(templates),
            config.allow_hardware_mismatch,
            self._setting_pool(),
            self.policy(),
            tf32_enabled(),
        )

    def _enumerable(
        self, problem: Problem, kernel_inputs: Any, template_choices: dict, kwarg_overrides: dict | None
    ) -> str | None:
        """The Triton template diode enumerates itself for this problem (its own enumeration on),
        or None."""
        if not config.enumerate_candidates:
            return None
        return enumerable_uid(problem, kernel_inputs, template_choices, kwarg_overrides)

    def _from_cache(
        self,
        problem: Problem,
        template_choices: dict,
        kernel_inputs: Any,
        templates: list,
        op_name: str,
        kwarg_overrides: dict | None,
        dynamic: DynamicSizes | None = None,
    ) -> tuple[list | None, dict]:
        """A repeated problem's decision without generating its whole candidate pool (the same GEMM
        in every layer of a model is decided once): the cached configs are materialised. If one is
        not among the candidates, the generators, with what was taken from them put back in front,
        go on to a new decision."""
        if not self._setting("cache_predictions") or self.engine is None:
            return None, template_choices
        try:
            key = self._cache_key(problem, kernel_inputs, templates, op_name, dynamic)
        except Exception:  # the full path decides (and reports what fails)
            return None, template_choices
        entry = self._cache.get(key)
        if entry is None:
            return None, template_choices
        configs, num_candidates = entry
        enumerable = self._enumerable(problem, kernel_inputs, template_choices, kwarg_overrides)
        make_probe = (
            (lambda: probe(self.get_ktc, problem, kernel_inputs, templates, enumerable, op_name))
            if enumerable
            else None
        )
        chosen, template_choices = materialise(configs, template_choices, enumerable, make_probe, problem.K)
        if chosen is None:
            self.stats.count("cache_stale")
            return None, template_choices
        self._cache.move_to_end(key)
        self.stats.count("cache_hits")
        self.stats.count("model_selections")
        self.stats.count("configs_filtered", num_candidates - len(chosen))
        return chosen, template_choices

    def _from_enumeration(
        self,
        problem: Problem,
        template_choices: dict,
        kernel_inputs: Any,
        templates: list,
        op_name: str,
        kwarg_overrides: dict | None,
        dynamic: DynamicSizes | None = None,
    ) -> tuple[list | None, dict]:
        """The decision with the Triton template's candidates enumerated by diode (over ``dynamic``'s
        sizes where the GEMM's sizes are symbolic). None where it
        does not apply, the full path then deciding (and reporting any fallback): the generators
        come back with what was taken from them in front."""
        if self.engine is None:
            return None, template_choices
        try:
            uid = self._enumerable(problem, kernel_inputs, template_choices, kwarg_overrides)
            if uid is None:
                return None, template_choices
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
                    parts.append(triton_candidates(problem, self._setting_pool(), ktc_config(base).allow_tf32))
                    owners.append(None)
                else:
                    lists[u] = list(gen)
                    configs = [ktc_config(k) for k in lists[u]]
                    parts.append((config_rows(configs), configs.__getitem__))
                    owners.append(lists[u])
            candidates = Candidates(parts)
            indices, commit = self._decide(problem, candidates, kernel_inputs, dynamic)
            chosen = []
            for i in indices:
                part, j = candidates.locate(i)
                chosen.append(
                    owners[part][j] if owners[part] is not None else ktc_with_config(base, candidates.config(i))
                )
            if any(k is None for k in chosen):  # an enumerated config Inductor's template does not reproduce
                missing = [candidates.config(i) for i, k in zip(indices, chosen) if k is None]
                logger.debug("torch-diode: %s's template does not reproduce %s", problem.short(), missing)
                self.stats.count("enumeration_mismatch")
                return None, restored()
            configs = [candidates.config(i) for i in indices]
            self._remember(problem, kernel_inputs, templates, op_name, configs, len(candidates), dynamic)
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
            raise Fallback("model_load_error" if self.load_error else "no_model")
        hardware = self._hardware_for(kernel_inputs)
        if not self._hardware_matches(hardware):
            raise Fallback("no_model_for_hardware", hardware.device_name)
        if problem.dtype_a not in SUPPORTED_DTYPES:
            raise Fallback("unsupported_dtype", problem.dtype_a)
        model_op = self.metadata.get("op")
        if model_op and model_op != op_name:
            raise Fallback("unsupported_op", op_name)

    def _choose(
        self,
        stock: list,
        problem: Problem | None,
        problem_error: Exception | None,
        kernel_inputs: Any,
        op_name: str,
        templates: list,
        dynamic: DynamicSizes | None = None,
    ) -> list:
        if self.engine is None:
            raise Fallback("model_load_error" if self.load_error else "no_model")
        if problem is None:
            if isinstance(problem_error, LookupError):
                raise Fallback("symbolic_sizes_without_hints", str(problem_error)) from None
            raise problem_error
        configs = [ktc_config(k) for k in stock]  # coverage was checked in _finalize
        indices, commit = self._decide(problem, Candidates.of(configs), kernel_inputs, dynamic)
        commit()
        chosen = [configs[i] for i in indices]
        self._remember(problem, kernel_inputs, templates, op_name, chosen, len(stock), dynamic)
        return [stock[i] for i in indices]

    def _predict(
        self, problem: Problem, candidates: Candidates, kernel_inputs: Any, indices: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every ensemble member's predicted ln time of each candidate of ``problem`` ([K, N]: their
        mean ranks, their spread is the risk) and the candidates' feature rows; with ``indices``,
        of those candidates alone."""
        configs = candidates.rows if indices is None else candidates.rows[indices]
        try:
            rows = with_aten_tf32(problem, configs, tf32_enabled())  # cuBLAS's TF32 kernels
            features = featurize_rows(problem, rows, self._hardware_for(kernel_inputs))
        except Exception as e:
            raise Fallback("feature_error", str(e), error=True) from None
        try:
            members = np.asarray(self.engine.predict_members(features), dtype=np.float64)
        except Exception as e:
            raise Fallback("inference_error", str(e), error=True) from None
        if members.ndim != 2 or members.shape[1] != len(configs):
            raise Fallback("inference_error", f"{members.shape} predictions for {len(configs)} candidates", error=True)
        if not np.all(np.abs(members) <= MAX_ABS_LN_TIME_US):  # NaN too
            bad = members[~(np.abs(members) <= MAX_ABS_LN_TIME_US)][0]
            raise Fallback("bad_prediction", f"predicted ln(time_us) {bad} for {problem.short()}", error=True)
        return members, features

    def _decide(
        self, problem: Problem, candidates: Candidates, kernel_inputs: Any, dynamic: DynamicSizes | None = None
    ) -> tuple[list[int], Any]:
        """Indices of the chosen configs, best first, and a function that records the decision
        (statistics, ``decisions``): called once the decision is used, so that a decision the
        enumerated path gives up is not counted twice. ``dynamic``: the GEMM's symbolic sizes, whose
        range decides (:func:`torch_diode.selection.decide_range`)."""
        members, features = self._predict(problem, candidates, kernel_inputs)
        predicted = members.mean(axis=0)
        hardware = self._hardware_for(kernel_inputs)
        # another SKU of the model's GPU: every decision unsure until a model for it ships
        self._family_hardware = (
            not config.allow_hardware_mismatch and self._hardware_ok.get(hardware.device_name) == "family"
        )
        try:
            if dynamic is not None and len(dynamic.problems) > 1:
                decision = self._select_range(problem, dynamic, candidates, kernel_inputs, members, features)
            else:
                decision = self._select(members, features, problem, candidates)
        except NoUsableCandidate:
            raise Fallback("no_usable_candidate") from None
        logger.debug(
            "torch-diode: %s -> %d of %d candidates (confidence %.3f)",
            problem.short(),
            len(decision.chosen),
            len(predicted),
            decision.confidence,
        )
        indices = [int(i) for i in decision.chosen]
        if not indices or not all(0 <= i < len(candidates) for i in indices):
            raise Fallback("bad_decision", f"chose {indices} of {len(candidates)} candidates", error=True)

        record = {
            "problem": problem.short(),
            "candidates": len(candidates),
            "chosen": [candidates.config(i).short() for i in indices],
            "predicted_us": [round(math.exp(predicted[i]), 2) for i in indices],
        }
        if decision.dynamic and dynamic is not None:  # the symbols' hint, lower and upper bound (None: none)
            record["sizes"] = {name: [hint, lower, upper] for name, hint, lower, upper in dynamic.key[0]}
            record["scenarios"] = len(dynamic.problems)

        def commit() -> None:
            self.stats.add(decision.notes())
            self.stats.decided(decision.confidence, len(predicted), record)

        return indices, commit

    def _select(
        self, predicted: np.ndarray, features: np.ndarray, problem: Problem, candidates: Candidates
    ) -> Decision:
        """The decision on the model's ``predicted`` ln times, [N] or per member [K, N]
        (:func:`torch_diode.selection.decide`)."""
        pool = decision_pool(problem, features, candidates.rows)
        contract = self._checked_contract()
        unsure = "hardware_family" if self._family_hardware else None
        return decide(problem, pool, predicted, self.policy(), contract, tf32_enabled(), unsure=unsure)

    def _select_range(
        self,
        problem: Problem,
        dynamic: DynamicSizes,
        candidates: Candidates,
        kernel_inputs: Any,
        members: np.ndarray,
        features: np.ndarray,
    ) -> Decision:
        """The decision over a dynamic GEMM's size scenarios (:func:`torch_diode.selection.decide_range`),
        the hint's predictions given; the other sizes predict only the candidates the rule reads
        there (:func:`torch_diode.selection.judged_over_range`)."""
        pool = decision_pool(problem, features, candidates.rows)
        contract = self._checked_contract()
        judged = judged_over_range(pool, members, contract)
        if not len(judged):
            raise NoUsableCandidate(f"no usable candidate of a known kind for {problem.short()}")
        predictions, rows = [members], [features]
        for other in dynamic.problems[1:]:
            m, f = self._predict(other, candidates, kernel_inputs, judged)
            full = np.full_like(members, np.nan)
            full[:, judged] = m
            predictions.append(full)
            rows.append(f)
        unsure = "hardware_family" if self._family_hardware else None
        return decide_range(dynamic.problems, pool, predictions, rows, self.policy(), contract, tf32_enabled(), unsure)

    def _remember(
        self,
        problem: Problem,
        kernel_inputs: Any,
        templates: list,
        op_name: str,
        chosen: list[KernelConfig],
        num_candidates: int,
        dynamic: DynamicSizes | None = None,
    ) -> None:
        if self._setting("cache_predictions"):
            key = self._cache_key(problem, kernel_inputs, templates, op_name, dynamic)
            self._cache[key] = (chosen, num_candidates)
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)

    def _hardware_matches(self, hardware: Hardware) -> bool:
        if config.allow_hardware_mismatch:
            return True
        if hardware.device_name not in self._hardware_ok:
            trained = self.metadata.get("hardware") or {}
            kind = self._hardware_ok[hardware.device_name] = hardware_match(trained, hardware)
            if kind == "family":  # another SKU of the model's GPU: every decision unsure
                from ..registry import warn_family_match

                warn_family_match(os.path.basename(self.model_path or "?"), trained.get("device_name", "?"), hardware)
        return self._hardware_ok[hardware.device_name] is not None


__all__ = ["DiodeInductorChoices"]
