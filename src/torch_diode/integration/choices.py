"""DiodeInductorChoices: the model chooses GEMM kernels inside torch.compile.

Inductor calls ``_finalize_template_configs`` with lazy generators of every candidate
(KernelTemplateChoice) before any kernel is generated. The candidate pool is
``config.candidate_pool`` (EXHAUSTIVE by default, so the model can pick kernels stock
max-autotune never tries), every candidate a KernelConfig exactly as the recorder converts it,
all of them ranked in one C++ call.

Where it can (``config.enumerate_candidates``, static sizes, Inductor's stock config settings,
Inductor's heuristic for the template holding the CUDA config lists diode reads),
diode enumerates the Triton mm/bmm template's candidates itself (:mod:`..collection.config_space`:
Inductor's lists, scaled and pruned by Inductor's rules, the same configs the training data was
measured with) instead of letting Inductor's generator build ~1,400 KernelTemplateChoice objects,
whose per-candidate work (a sympy EVEN_K check, dataclass copies) costs more than the whole
decision (even its first candidate: Inductor scales the whole list before yielding one). The
chosen configs become KernelTemplateChoices as Inductor's lookup table builds them: a probe
candidate of the template (the first of a generator Inductor makes for its ~20-config DEFAULT
list, which must equal diode's first DEFAULT config, else the full path runs) with the config's
parameters (block sizes, GROUP_M, stages, warps, EVEN_K) put in; each must convert back to its
config. Other templates' candidates (ATen...) are
Inductor's own. Without enumeration, Inductor's generators produce the pool and their
KernelTemplateChoice objects are returned for the chosen ones.

Selection: the ``top_k_configs`` best predictions, plus any predicted within
``performance_threshold`` of the best, at most ``max_selected_configs``. The best ATen/cuBLAS
choice counts as the best unless a Triton config is predicted ``extern_preference`` times faster
(:mod:`torch_diode.selection`: it needs no compiling, and a small predicted gain is within the
model's error). Candidates whose shared
memory need exceeds the device (the C++ ``smem_exceeds`` feature) are never chosen: they would
fail to compile.

Confidence rule: a problem is "unsure" where it lies outside the model's training range (any of
log2 B, M, N, K more than one unit, i.e. 2x, beyond what the training data of its element type
held: an H100 set whose fp32 part had M >= 256 left an fp32 GEMM with M=32 unsure), or where an
operand's rows are not 16-byte aligned (K=479, 197 tokens) and the training data held no such
problem: cuBLAS and the Triton templates lose their vector loads there, and a model that never saw
it ranks them as if aligned (an H100 model trained on aligned sizes only: top-1 0.75, worst 2.2x on
10 such shapes, against 0.97 on aligned ones), or where the model's first picks on the held-out
problems of its training run of the same kind (misaligned or aligned) were on geometric mean more
than ``unsure_heldout_slowdown`` (1.05) times slower than the best (``diode train`` records it
from its validation split, where that held at least 5 problems of the kind:
the shipped H100 model, trained on 866 problems, picks 1.109x slower than the best on 33
held-out misaligned ones, and 1.029x on 97 aligned ones; a model trained without a
validation split, or whose split held fewer than 5 problems of a kind, is judged by the other
rules alone there; the split also chose the early stop, so the figure leans optimistic), or
where its element type had fewer than
``min_dtype_problems`` training problems (an H100 model that learnt fp32 from 39 problems: top-1
0.88, worst 2.45x on 15 held-out fp32 problems, top-5 1.00), or where it is fp32 with TF32
allowed (``torch.set_float32_matmul_precision("high")``) and the model records no such timing.
The selection then widens to
the first pick and the next best predicted among the ATen choices and the Triton configs of
Inductor's DEFAULT list, ``unsure_top_k`` in all, and Inductor benchmarks those, so an extrapolating
model costs compile time rather than a slow kernel (:func:`torch_diode.selection.widen`: on 262
held-out unaligned H100 problems the best of those is 1.018x the best measured, against 1.038x for
the top 5 of the whole EXHAUSTIVE pool within 1.3x of the best prediction). The reported confidence of a
decision is the predicted relative gap between the best and the second-best candidate (0: a coin
toss, 1: no contest).

Fallback (the stock list, counted by reason in ``get_stats()``): no model for this hardware, an op
or dtype the model does not cover, sizes without hints, any error in features or inference. With
``enable_fallback=False`` errors raise instead. The returned list is never empty.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
import os
import time
from collections import Counter, OrderedDict, deque
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
from torch._inductor import config as inductor_config
from torch._inductor.choices import InductorChoices

from .. import config
from ..collection.config_space import raw_config_lists, rows_of, template_id, tf32_enabled, triton_candidates
from ..collection.recorder import config_from_kwargs, problem_from_nodes
from ..features import FEATURE_NAMES, Candidates, config_rows, featurize_rows
from ..hardware import detect_hardware, hardware_match
from . import inductor_config as inductor_settings
from ..selection import beyond_default_list, selection_order, usable_candidates, widen
from ..types import Hardware, KernelConfig, Problem

logger = logging.getLogger(__name__)

SUPPORTED_OPS = ("mm", "addmm", "bmm", "baddbmm")
SUPPORTED_DTYPES = ("float16", "bfloat16", "float32")
_RANGE_FEATURES = ("log2_batch", "log2_m", "log2_n", "log2_k")
# A held-out figure from fewer problems is noise: the other rules decide.
_MIN_HELDOUT_PROBLEMS = 5

# Process-wide prediction statistics (torch_diode.get_prediction_stats / profile_predictions).
PREDICTION_STATS: Counter = Counter()
_CONFIDENCES: list[float] = []


class Fallback(Exception):
    """Diode does not decide this GEMM; ``reason`` is counted in the stats."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def ktc_config(ktc: Any) -> KernelConfig:
    """The KernelConfig of an Inductor KernelTemplateChoice (the recorder's conversion)."""
    return config_from_kwargs(ktc.template.uid, {**ktc.params.to_kwargs(), **(ktc.extra_kwargs or {})})


def ktc_with_config(base: Any, config: KernelConfig) -> Any:
    """A KernelTemplateChoice of ``base``'s template, inputs and layout with ``config``'s tile
    parameters, built as Inductor's lookup table builds its choices; None unless it converts back
    to ``config``."""
    from torch._inductor.kernel_template_choice import KernelTemplateChoice
    from torch._inductor.template_heuristics.params import DictKernelTemplateParams

    kwargs = {**base.params.to_kwargs(), "BLOCK_M": config.block_m, "BLOCK_N": config.block_n, "BLOCK_K": config.block_k,
              "GROUP_M": config.group_m, "num_stages": config.num_stages, "num_warps": config.num_warps, "EVEN_K": config.even_k}
    ktc = KernelTemplateChoice(template=base.template, params=DictKernelTemplateParams(kwargs), extra_kwargs=base.extra_kwargs,
                               layout=base.layout, inputs=base.inputs)
    return ktc if ktc_config(ktc) == config else None


class DiodeInductorChoices(InductorChoices):
    """An InductorChoices that ranks GEMM candidates with a torch-diode model."""

    def __init__(self, model_path: str | os.PathLike | None = None, device: str = "cpu", top_k_configs: int | None = None,
                 performance_threshold: float | None = None, enable_fallback: bool | None = None):
        super().__init__()
        import json

        from ..predict import load_model
        from ..registry import detect_model, resolve_model

        self.device = device  # where the model runs: the C++ engine runs on the CPU
        self.top_k_configs = top_k_configs
        self.performance_threshold = performance_threshold
        self.enable_fallback = enable_fallback
        # None: the model for the current GPU (exact or of its family), if any. A model that cannot
        # be loaded leaves Inductor's stock choices (logged; counted per GEMM as model_load_error).
        self.model_path, self.engine, self.load_error = None, None, None
        try:
            self.model_path = str(resolve_model(model_path) if model_path is not None else detect_model() or "") or None
            self.engine = load_model(self.model_path) if self.model_path else None
        except (OSError, ValueError) as e:  # missing file or name, ModelFormatError (a ValueError)
            if not self._setting("enable_fallback"):
                raise
            self.model_path, self.load_error = None, f"{type(e).__name__}: {e}"
            logger.warning("torch-diode: model %s cannot be loaded (%s); Inductor keeps its stock choices", model_path, e)
        self.metadata = json.loads(self.engine.metadata_json) if self.engine is not None else {}
        self._hardware_ok: dict[str, str | None] = {}  # device name -> "exact", "family" or None
        self._family_hardware = False  # the GPU being decided for is only of the model's family
        self._hardware: dict[str, Hardware] = {}
        self._lists_checked: dict[tuple, bool] = {}
        # decision cache: key -> (the chosen configs, how many candidates there were)
        self._cache: OrderedDict[tuple, tuple[list[KernelConfig], int]] = OrderedDict()
        self.stats: Counter = Counter()
        self.decision_seconds = 0.0
        # The latest decisions, for reports: problem, chosen candidates and their predicted time.
        self.decisions: deque[dict[str, Any]] = deque(maxlen=256)
        digest = hashlib.sha256(open(self.model_path, "rb").read()).hexdigest()[:16] if self.model_path else "none"
        self._uuid = f"torch-diode:{digest}"

    # Inductor's FX-graph cache key includes this: a different model or settings, another key.
    def uuid(self) -> str:
        return f"{self._uuid}:{sorted(config.snapshot().items())}:{self.top_k_configs}:{self.performance_threshold}"

    # ----- settings -------------------------------------------------------------------------------
    def _setting(self, name: str) -> Any:
        own = getattr(self, name, None)
        return own if own is not None else getattr(config, name)

    def get_stats(self) -> dict[str, Any]:
        fallbacks = {k[len("fallback_"):]: v for k, v in self.stats.items() if k.startswith("fallback_")}
        return {
            "total_calls": self.stats["total_calls"],
            "model_selections": self.stats["model_selections"],
            "fallbacks": fallbacks,
            "fallbacks_total": sum(fallbacks.values()),
            **{f"fallback_{reason}": n for reason, n in fallbacks.items()},
            "model_load_error": self.load_error,
            "fast_autotune_off": self.stats["fast_autotune_off"],
            "configs_filtered": self.stats["configs_filtered"],
            "cache_hits": self.stats["cache_hits"],
            "cache_stale": self.stats["cache_stale"],
            "enumerated": self.stats["enumerated"],
            "enumeration_mismatch": self.stats["enumeration_mismatch"],
            "unsure_widened": self.stats["unsure_widened"],
            "unsure_benchmarked": self.stats["unsure_benchmarked"],
            "unsure_out_of_range": self.stats["unsure_out_of_range"],
            "unsure_misaligned": self.stats["unsure_misaligned"],
            "unsure_few_examples": self.stats["unsure_few_examples"],
            "unsure_tf32": self.stats["unsure_tf32"],
            "unsure_heldout": self.stats["unsure_heldout"],
            "unsure_hardware_family": self.stats["unsure_hardware_family"],
            "extern_preferred": self.stats["extern_preferred"],
            "extern_added": self.stats["extern_added"],
            "not_gemm": self.stats["not_gemm"],
            "decision_seconds": self.decision_seconds,
        }

    def reset_stats(self) -> None:
        self.stats.clear()
        self.decision_seconds = 0.0
        self.decisions.clear()

    # ----- the hook -------------------------------------------------------------------------------
    def _finalize_template_configs(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None):
        if op_name not in SUPPORTED_OPS:
            self.stats["not_gemm"] += 1
            return super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
        # Inductor's diode_* / fast_autotune settings, where set, for this decision
        with config.patch(**inductor_settings.decision_settings()):
            if not config.fast_autotune:  # Inductor autotunes its stock candidates
                self.stats["fast_autotune_off"] += 1
                return super()._finalize_template_configs(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
            self.stats["total_calls"] += 1
            start = time.perf_counter()
            try:
                return self._finalize(template_choices, kernel_inputs, templates, op_name, kwarg_overrides)
            finally:
                self.decision_seconds += time.perf_counter() - start

    def _finalize(self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides):
        # the problem, built once for every path (None where it cannot be: the full path reports why)
        try:
            problem, problem_error = problem_from_nodes(op_name, kernel_inputs.nodes(), kernel_inputs.out_dtype(), require_hints=True), None
        except Exception as e:
            problem, problem_error = None, e
        pool = self._setting_pool()
        with inductor_config.patch(max_autotune_gemm_search_space=pool):
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
            reason = e.reason if isinstance(e, Fallback) else f"error_{type(e).__name__}"
            self.stats[f"fallback_{reason}"] += 1
            PREDICTION_STATS["fallbacks"] += 1
            if not self._setting("enable_fallback") and not isinstance(e, Fallback):
                raise
            logger.debug("torch-diode: stock choices for %s (%s)", op_name, e)
            return stock if config.fallback_to_autotune else self._without_autotune(stock)
        self.stats["model_selections"] += 1
        self.stats["configs_filtered"] += len(stock) - len(chosen)
        return chosen

    def _without_autotune(self, stock: list) -> list:
        """``fallback_to_autotune`` off: the first ATen choice alone, default mode's kernel, nothing
        benchmarked (the stock list where it holds none)."""
        for ktc in stock:
            try:
                if not ktc_config(ktc).is_tiled:
                    return [ktc]
            except Exception:
                continue
        return stock

    def _cache_key(self, problem: Problem, kernel_inputs: Any, templates: list, op_name: str) -> tuple:
        """What a decision depends on, known before any candidate is generated."""
        uids = tuple(sorted(str(getattr(t, "uid", None) or type(t).__name__) for t in templates))
        device = str(kernel_inputs.nodes()[-1].get_device())
        return (problem, device, op_name, uids, config.allow_hardware_mismatch, self._setting_pool(), self._setting("top_k_configs"),
                self._setting("performance_threshold"), config.max_selected_configs, config.unsure_top_k,
                config.min_dtype_problems, config.unsure_heldout_slowdown, config.extern_preference,
                tf32_enabled())

    def _from_cache(self, problem: Problem, template_choices: dict, kernel_inputs: Any, templates: list, op_name: str,
                    kwarg_overrides: dict | None) -> tuple[list | None, dict]:
        """A repeated problem's decision without generating its whole candidate pool (the same GEMM
        in every layer of a model is decided once): the cached configs are materialised (see
        :meth:`_materialise`). If one is not among the candidates, the generators, with what was
        taken from them put back in front, go on to a new decision."""
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
        enumerable = self._enumerable_uid(problem, kernel_inputs, template_choices, kwarg_overrides)
        probe = (lambda: self._probe(problem, kernel_inputs, templates, enumerable, op_name)) if enumerable else None
        chosen, template_choices = self._materialise(configs, template_choices, enumerable, probe, problem.K)
        if chosen is None:
            self.stats["cache_stale"] += 1
            return None, template_choices
        self._cache.move_to_end(key)
        self.stats["cache_hits"] += 1
        self.stats["model_selections"] += 1
        self.stats["configs_filtered"] += num_candidates - len(chosen)
        return chosen, template_choices

    def _materialise(self, wanted: list[KernelConfig], template_choices: dict, enumerable: str | None,
                     probe: Any = None, static_k: int = 0) -> tuple[list | None, dict]:
        """KernelTemplateChoices for ``wanted`` configs, in order: those of the ``enumerable``
        template built from ``probe()`` (see :meth:`_probe`), the others found in their template's generator,
        consumed only as far as needed. None if one is missing; the generators come back with what
        was taken from them in front."""
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
                if uid == enumerable and want.is_tiled and (base := base or probe()) is not None:
                    # static sizes here: a decision cached from a dynamic graph of the same hints
                    # (EVEN_K False) is not this graph's kernel
                    ktc = ktc_with_config(base, want) if want.even_k == (static_k % want.block_k == 0) else None
                else:
                    ktc = candidate(uid, want)
                if ktc is None:
                    return None, restored()
                out.append(ktc)
        except Exception:  # a conversion failing: the full path decides, and reports what fails
            return None, restored()
        return out, restored()

    def _enumerable_uid(self, problem: Problem, kernel_inputs: Any, template_choices: dict, kwarg_overrides: dict | None) -> str | None:
        """The Triton template whose candidates diode can enumerate for this problem, or None:
        its own enumeration is on, the sizes are static (EVEN_K is then K % BLOCK_K == 0), and
        Inductor's config generation runs with its stock settings."""
        if not config.enumerate_candidates:
            return None
        try:
            uid = template_id(problem)
            if uid not in template_choices or (kwarg_overrides or {}).get(uid):
                return None
            if getattr(inductor_config, "multi_kernel_hints", None) \
                    or getattr(getattr(inductor_config, "test_configs", None), "max_mm_configs", None) is not None \
                    or getattr(inductor_config, "max_autotune_prune_choices_based_on_shared_mem", False):
                return None
            sizes = kernel_inputs.mnk_symbolic()
            return uid if all(isinstance(s, int) or getattr(s, "is_Integer", False) for s in sizes) else None
        except Exception:  # anything unexpected: Inductor's generators produce the pool
            return None

    def _same_config_lists(self, uid: str, kernel_inputs: Any, op_name: str) -> bool:
        """Whether Inductor's heuristic for this template holds the config lists diode enumerates
        (``config_space.raw_config_lists``: CUDA's); checked once per template, device and op."""
        key = (uid, kernel_inputs.device_type, op_name)
        if key not in self._lists_checked:
            try:
                from torch._inductor.template_heuristics.registry import get_template_heuristic

                heuristic = get_template_heuristic(uid, kernel_inputs.device_type, op_name)
                lists = raw_config_lists()
                self._lists_checked[key] = (rows_of(heuristic.mm_configs) == lists["DEFAULT"]
                                            and rows_of(heuristic.exhaustive_configs) == lists["EXHAUSTIVE"])
            except Exception as e:  # another torch's layout: Inductor's generators produce the pool
                logger.debug("torch-diode: cannot compare %s's config lists (%s)", uid, e)
                self._lists_checked[key] = False
        return self._lists_checked[key]

    def _probe(self, problem: Problem, kernel_inputs: Any, templates: list, uid: str, op_name: str) -> Any:
        """A KernelTemplateChoice of template ``uid`` to put chosen configs into: the first
        candidate of a generator Inductor makes for its DEFAULT list (~20 configs to scale, not
        ~1,900). None unless it converts to diode's first DEFAULT config (what diode enumerates
        must be what Inductor would generate)."""
        template = next((t for t in templates if getattr(t, "uid", None) == uid), None)
        if template is None or not self._same_config_lists(uid, kernel_inputs, op_name):
            return None
        with inductor_config.patch(max_autotune_gemm_search_space="DEFAULT"):
            first = next(iter(self.get_ktc(kernel_inputs, template, op_name, {})), None)
        expected, expected_config = triton_candidates(problem, "DEFAULT")
        if first is None or not len(expected) or ktc_config(first) != expected_config(0):
            logger.debug("torch-diode: Inductor's first %s candidate is not diode's first config for %s", uid, problem.short())
            return None
        return first

    def _from_enumeration(self, problem: Problem, template_choices: dict, kernel_inputs: Any, templates: list, op_name: str,
                          kwarg_overrides: dict | None) -> tuple[list | None, dict]:
        """The decision with the Triton template's candidates enumerated by diode (module
        docstring). None where it does not apply, the full path then deciding (and reporting any
        fallback): the generators come back with what was taken from them in front."""
        if self.engine is None:
            return None, template_choices
        try:
            uid = self._enumerable_uid(problem, kernel_inputs, template_choices, kwarg_overrides)
            if uid is None:
                return None, template_choices
            self._check_covered(problem, kernel_inputs, op_name)
        except Exception:
            return None, template_choices
        lists: dict[Any, list] = {}

        def restored() -> dict:
            return {u: iter(lists[u]) if u in lists else g for u, g in template_choices.items()}

        try:
            base = self._probe(problem, kernel_inputs, templates, uid, op_name)
            if base is None:
                self.stats["enumeration_mismatch"] += 1
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
                self.stats["enumeration_mismatch"] += 1
                return None, restored()
            self._remember(problem, kernel_inputs, templates, op_name, [candidates.config(i) for i in indices], len(candidates))
        except Exception as e:  # the full path decides again and reports the failure as its own
            logger.debug("torch-diode: enumeration of %s failed (%s)", op_name, e)
            return None, restored()
        commit()
        self.stats["enumerated"] += 1
        self.stats["model_selections"] += 1
        self.stats["configs_filtered"] += len(candidates) - len(chosen)
        return chosen, restored()

    def _setting_pool(self) -> str:
        pool = config.candidate_pool
        return pool if pool in ("DEFAULT", "EXHAUSTIVE") else "EXHAUSTIVE"

    def _hardware_for(self, kernel_inputs: Any) -> Hardware:
        device = kernel_inputs.nodes()[-1].get_device()
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

    def _choose(self, stock: list, problem: Problem | None, problem_error: Exception | None, kernel_inputs: Any, op_name: str,
                templates: list) -> list:
        if self.engine is None:
            raise Fallback("model_load_error" if self.load_error else "no_model")
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
        try:
            predicted = np.asarray(self.engine.predict_features(features), dtype=np.float64)
        except Exception as e:
            raise Fallback("inference_error", str(e)) from None
        if not np.all(np.isfinite(predicted)):
            raise Fallback("inference_error", "non-finite prediction")
        notes: Counter = Counter()
        hardware = self._hardware_for(kernel_inputs)
        self._family_hardware = not config.allow_hardware_mismatch and self._hardware_ok.get(hardware.device_name) == "family"
        indices, gap = self._select(predicted, features, problem, candidates, notes)

        def commit() -> None:
            self.stats.update(notes)
            PREDICTION_STATS["total_predictions"] += 1
            PREDICTION_STATS["configs_scored"] += len(predicted)
            _CONFIDENCES.append(gap)
            self.decisions.append({"problem": problem.short(), "candidates": len(candidates),
                                   "chosen": [candidates.config(i).short() for i in indices],
                                   "predicted_us": [round(math.exp(predicted[i]), 2) for i in indices]})

        return indices, commit

    def _remember(self, problem: Problem, kernel_inputs: Any, templates: list, op_name: str, chosen: list[KernelConfig],
                  num_candidates: int) -> None:
        if self._setting("cache_predictions"):
            self._cache[self._cache_key(problem, kernel_inputs, templates, op_name)] = (chosen, num_candidates)
            if len(self._cache) > 4096:
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

    def _unsure(self, features: np.ndarray, problem: Problem) -> str | None:
        """Why the model's ranking of this problem is not to be trusted alone, or None."""
        if self._family_hardware:
            return "hardware_family"  # a model of another SKU of this GPU, until one for it ships
        training = self.metadata.get("training_data") or {}
        by_dtype = training.get("problem_feature_ranges_by_dtype")
        if by_dtype and problem.dtype_a not in by_dtype:
            return "out_of_range"  # the model never saw this element type
        ranges = (by_dtype or {}).get(problem.dtype_a) or training.get("problem_feature_ranges") or {}
        for name in _RANGE_FEATURES:
            lo, hi = ranges.get(name, (-math.inf, math.inf))
            value = float(features[0, FEATURE_NAMES.index(name)])
            if value < lo - 1.0 or value > hi + 1.0:
                return "out_of_range"
        # only where the training data's counts are known (diode train records them)
        count = (training.get("problems_by_dtype") or {}).get(problem.dtype_a)
        if count is not None and count < int(config.min_dtype_problems):
            return "few_examples"
        misaligned = bool(problem.misaligned_operands)
        if misaligned and training.get("misaligned_problems", 1) == 0:
            return "misaligned"
        # the model's first picks on held-out problems of this kind were slow (diode train records it)
        heldout = (training.get("heldout_top1_slowdown") or {}).get("misaligned" if misaligned else "aligned")
        if (heldout and int(heldout["problems"]) >= _MIN_HELDOUT_PROBLEMS
                and float(heldout["geomean"]) > float(config.unsure_heldout_slowdown)):
            return "misaligned" if misaligned else "heldout"
        # fp32 with TF32 allowed runs other kernels (cuBLAS and Triton) than a model timed without it
        if problem.dtype_a == "float32" and training.get("tf32_problems", 1) == 0 and tf32_enabled():
            return "tf32"
        return None

    def _select(self, predicted: np.ndarray, features: np.ndarray, problem: Problem, candidates: Candidates,
                notes: Counter) -> tuple[list[int], float]:
        """The chosen indices and the decision's confidence; what it counts goes into ``notes``."""
        extern = candidates.extern
        usable = usable_candidates(features)
        if len(usable) == 0:
            raise Fallback("no_usable_candidate")
        order = selection_order(predicted, extern, float(config.extern_preference), usable)
        if order[0] != usable[np.argmin(predicted[usable])]:
            notes["extern_preferred"] += 1
        k = max(1, int(self._setting("top_k_configs")))
        widened: list[int] = []
        unsure = self._unsure(features, problem)
        if unsure:
            # the first pick and the best predicted among ATen and Inductor's DEFAULT Triton configs
            widened = widen(order, config.unsure_top_k, ~beyond_default_list(problem, candidates.rows))
            notes["unsure_widened"] += 1
            notes[f"unsure_{unsure}"] += 1
            notes["unsure_benchmarked"] += len(widened) > 1  # more than the first pick (unsure_top_k > 1)
        threshold = float(self._setting("performance_threshold"))
        best = predicted[order[0]]
        within = [i for i in order if predicted[i] <= best + math.log(threshold)] if threshold > 1.0 else []
        cap = max(k, len(widened), int(config.max_selected_configs))
        chosen = list(dict.fromkeys(list(order[:k]) + widened + within))[:cap]
        if len(chosen) > 1 and not any(extern[i] for i in chosen) and extern[order].any():
            # Several choices become one MultiTemplateBuffer, which Inductor's scheduler resolves
            # to an ATen choice when the Triton winner's layout conflicts with its users'; with no
            # ATen choice in it, torch.compile fails (an AssertionError seen on the H100 with
            # top_k_configs=3 in a decode block). The best extern choice rides along: it needs
            # no compilation, and Inductor's benchmark only takes it if it is faster.
            chosen.append(int(order[extern[order]][0]))
            notes["extern_added"] += 1
        ranked = np.sort(predicted[usable])
        gap = 1.0 - math.exp(ranked[0] - ranked[1]) if len(ranked) > 1 else 1.0
        logger.debug("torch-diode: %s -> %d of %d candidates (confidence %.3f)", problem.short(), len(chosen), len(predicted), gap)
        return [int(i) for i in chosen], gap


def get_prediction_stats() -> dict[str, Any]:
    """total_predictions (GEMMs the model decided), avg_confidence, fallbacks, configs_scored."""
    return {
        "total_predictions": PREDICTION_STATS["total_predictions"],
        "avg_confidence": float(np.mean(_CONFIDENCES)) if _CONFIDENCES else math.nan,
        "fallbacks": PREDICTION_STATS["fallbacks"],
        "configs_scored": PREDICTION_STATS["configs_scored"],
    }


@contextmanager
def profile_predictions() -> Iterator[dict[str, Any]]:
    """Resets the prediction statistics for the block; the yielded dict is filled on exit."""
    PREDICTION_STATS.clear()
    _CONFIDENCES.clear()
    result: dict[str, Any] = {}
    try:
        yield result
    finally:
        result.update(get_prediction_stats())
