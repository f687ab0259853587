"""DiodeInductorChoices through real torch.compile on the CPU (Inductor calls it there for bmm)."""

import dataclasses
import os
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import numpy as np
import pytest
import torch
from torch._inductor import config as inductor_config

from torch_diode import config
from torch_diode.integration.choices import DiodeInductorChoices
from torch_diode.integration.install import (
    diode_choices,
    install_diode_choices,
    installed_choices,
    uninstall_diode_choices,
)
from torch_diode.integration.stats import profile_predictions
from torch_diode.model_file import read_model, write_model
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.types import KernelConfig, Problem

pytestmark = pytest.mark.slow
# fx_graph_cache off: every compile lowers the graph again and asks the handler; the C++ kernels
# of the CPP template stay in their cache (force_disable_caches would compile them each time)
CPU_BMM = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "CPP,ATEN",
    "fx_graph_cache": False,
    "autotune_local_cache": False,
}


@pytest.fixture(autouse=True)
def _enough_examples():
    """cpu_model learnt from 3 problems: below any sensible min_dtype_problems, which would make
    every problem unsure; the tests of other rules judge it as a model with enough examples."""
    with config.patch(min_dtype_problems=0):
        yield


def compile_bmm(a, b):
    torch._dynamo.reset()
    with inductor_config.patch(CPU_BMM):
        return torch.compile(torch.bmm)(a, b)


def test_install_and_uninstall_restore_everything(cpu_model):
    from torch._inductor.virtualized import _choices, threadlocal

    before_handler = getattr(threadlocal, _choices._key, None)
    before_config = {
        k: getattr(inductor_config, k) for k in ("fx_graph_cache", "max_autotune_gemm") if hasattr(inductor_config, k)
    }
    has_class = hasattr(inductor_config, "inductor_choices_class")
    before_class = inductor_config.inductor_choices_class if has_class else None
    choices = install_diode_choices(cpu_model, enable_gemm_autotune=True)
    assert installed_choices() is choices and _choices._get_handler(False) is choices
    assert inductor_config.max_autotune_gemm is True
    if has_class:
        assert inductor_config.inductor_choices_class() is choices
    assert uninstall_diode_choices() and not uninstall_diode_choices()
    assert getattr(threadlocal, _choices._key, None) is before_handler
    assert {k: getattr(inductor_config, k) for k in before_config} == before_config
    if has_class:
        assert inductor_config.inductor_choices_class is before_class
    with diode_choices(cpu_model) as c:
        assert installed_choices() is c
    assert installed_choices() is None


def test_install_applies_inductors_compile_worker_ptxas_rule_unless_turned_off(cpu_model, monkeypatch):
    """Installing a handler runs Inductor's own rule for its compile workers' ptxas in this process
    (worker_ptxas), so Inductor's benchmark of an unsure decision finds the kernels its workers
    compiled in Triton's cache; a TRITON_PTXAS_PATH the user set is kept; off, nothing is applied."""
    from torch._inductor.runtime import compile_tasks

    from torch_diode.inductor.hooks import use_worker_ptxas

    calls = []
    monkeypatch.setattr(compile_tasks, "_set_triton_ptxas_path", lambda: calls.append(1))
    with diode_choices(cpu_model):
        assert calls == [1]
    with config.patch(worker_ptxas=False), diode_choices(cpu_model):
        assert calls == [1]

    def broken():
        raise OSError("ptxas: permission denied")

    monkeypatch.setattr(compile_tasks, "_set_triton_ptxas_path", broken)
    with diode_choices(cpu_model) as c:  # the install goes on without it
        assert installed_choices() is c
    monkeypatch.undo()
    # Inductor's rule itself: a path the user set stays (this CPU torch ships no ptxas to set)
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/cuda/bin/ptxas")
    assert use_worker_ptxas() == "/opt/cuda/bin/ptxas"
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    bundled = os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas")
    assert use_worker_ptxas() == (bundled if os.access(bundled, os.X_OK) else None)


def test_installing_clears_the_memos_of_the_ptxas_version(monkeypatch):
    """A process that compiled before the install may hold the version of another ptxas than its
    path (Inductor sets the path in this process only as it compiles a kernel here, after keying
    it): installing clears Triton's and Inductor's memos of the version, so that later compiles key
    with the path's ptxas."""
    import functools
    import types

    import torch.utils._triton as torch_triton
    from torch._inductor.runtime import compile_tasks

    from torch_diode.inductor.hooks import use_worker_ptxas

    reads = []

    @functools.lru_cache
    def get_ptxas_version(arch: int = 80):
        reads.append(os.environ.get("TRITON_PTXAS_PATH"))
        return reads[-1]

    class CUDABackend:
        @functools.lru_cache  # noqa: B019 - as Triton memoises it
        def hash(self):
            return get_ptxas_version()

    backend = CUDABackend()

    @functools.cache
    def triton_hash_with_backend():
        return backend.hash()

    nvidia = types.ModuleType("triton.backends.nvidia.compiler")
    nvidia.get_ptxas_version, nvidia.CUDABackend = get_ptxas_version, CUDABackend
    monkeypatch.setitem(sys.modules, "triton.backends.nvidia.compiler", nvidia)
    monkeypatch.setattr(torch_triton, "triton_hash_with_backend", triton_hash_with_backend)
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    assert triton_hash_with_backend() is None  # keyed with Triton's own ptxas
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/ptxas")  # then Inductor's rule, as it compiles here
    assert triton_hash_with_backend() is None  # the memo still holds the other version
    monkeypatch.setattr(compile_tasks, "_set_triton_ptxas_path", lambda: None)
    assert use_worker_ptxas() == "/opt/ptxas"
    assert triton_hash_with_backend() == "/opt/ptxas" and reads == [None, "/opt/ptxas"]


def test_model_decides_and_caches(cpu_model):
    a, b = torch.randn(3, 40, 24), torch.randn(3, 24, 56)
    with diode_choices(cpu_model) as choices, profile_predictions() as prof:
        out = compile_bmm(a, b)
        torch.testing.assert_close(out, torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["total_calls"] == 1 and stats["model_selections"] == 1 and stats["fallbacks_total"] == 0
        assert stats["decision_seconds"] > 0
        (decision,) = choices.decisions
        assert (
            decision["problem"].startswith("bmm")
            and decision["chosen"]
            and decision["candidates"] >= len(decision["chosen"])
        )
        assert len(decision["predicted_us"]) == len(decision["chosen"]) and all(t > 0 for t in decision["predicted_us"])
        compile_bmm(a, b)  # same problem: the decision comes from the cache
        assert choices.get_stats()["cache_hits"] == 1
        with config.patch(top_k_configs=3):  # other settings: not the cached decision
            compile_bmm(a, b)
        assert choices.get_stats()["cache_hits"] == 1 and choices.get_stats()["model_selections"] == 3
    assert prof["total_predictions"] == 2 and prof["fallbacks"] == 0


def test_every_gemm_call_ends_in_a_selection_a_fallback_or_no_candidates(cpu_model, tmp_path):
    """An addmm asks the handler twice, for its ATen choices and apart for its Triton templates,
    which offer none on a CPU: that call counts under no_candidates, so total_calls adds up."""
    other = read_model(cpu_model)
    other.metadata["hardware"]["device_name"] = "NVIDIA H100 80GB HBM3"
    other_path = write_model(tmp_path / "h100.diode", other)
    bias, a, b = torch.randn(56), torch.randn(40, 24), torch.randn(24, 56)
    for model in (cpu_model, other_path):
        torch._dynamo.reset()
        with diode_choices(model) as choices, inductor_config.patch(CPU_BMM):
            out = torch.compile(torch.addmm)(bias, a, b)
            stats = choices.get_stats()
        torch.testing.assert_close(out, torch.addmm(bias, a, b))
        decided = stats["model_selections"] + stats["fallbacks_total"]
        assert decided == 1 and stats["total_calls"] == decided + stats["no_candidates"], stats


def test_a_stale_cached_decision_goes_to_the_full_path(cpu_model):
    """The cache answers only with the configs it decided; if one of them is not among the
    candidates, the problem is decided again from every candidate."""
    a, b = torch.randn(3, 40, 24), torch.randn(3, 24, 56)
    with diode_choices(cpu_model) as choices:
        compile_bmm(a, b)
        ((key, (configs, n)),) = choices._cache.items()
        choices._cache[key] = ([KernelConfig("aten::not_this_one")] * len(configs), n)
        torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["cache_stale"] == 1 and stats["cache_hits"] == 0 and stats["model_selections"] == 2, stats
        assert choices._cache[key][0] == configs  # decided again, the same way
        compile_bmm(a, b)
        assert choices.get_stats()["cache_hits"] == 1


def test_collect_records_stock_autotuning_while_diode_is_installed(cpu_model, tmp_path):
    """A Collector takes diode's handler out while it records (else Inductor would benchmark only
    diode's pick: with k=1, nothing) and puts the same handler back afterwards."""
    from torch_diode.collection import collect

    a, b = torch.randn(2, 48, 40), torch.randn(2, 40, 72)
    with diode_choices(cpu_model) as choices:
        with collect(tmp_path / "rec.json") as col:
            assert installed_choices() is None
            compile_bmm(a, b)
        assert col.stats["gemms"] == 1 and col.stats["choices"] >= 2
        assert installed_choices() is choices
        compile_bmm(a, b)  # diode decides again once recording stops
        assert choices.get_stats()["model_selections"] == 1
        # a handler set on top of diode's is the user's business: collect leaves it in force
        from torch._inductor.choices import InductorChoices
        from torch._inductor.virtualized import V, _choices

        mine = InductorChoices()
        with V.set_choices_handler(mine), collect(tmp_path / "rec2.json"):
            assert _choices._get_handler() is mine and installed_choices() is choices
    assert installed_choices() is None


def test_in_inductor_prediction_equals_diode_predict(cpu_model):
    """One feature path: what the handler predicts for a (problem, config) is what `diode predict` gives."""
    seen = []

    class Spy(DiodeInductorChoices):
        def _select(self, predicted, features, problem, candidates):
            seen.append((problem, features, np.atleast_2d(predicted).mean(axis=0)))  # [K, N] per member: their mean
            return super()._select(predicted, features, problem, candidates)

    spy = Spy(cpu_model)
    from torch._inductor.virtualized import V

    with V.set_choices_handler(spy):
        compile_bmm(torch.randn(2, 33, 17), torch.randn(2, 17, 45))
    ((problem, features, predicted),) = seen
    from torch_diode.features import featurize
    from torch_diode.hardware import detect_hardware

    hardware = detect_hardware("cpu")
    assert (problem.B, problem.M, problem.N, problem.K) == (2, 33, 45, 17)

    offline = predict_log_time_us(load_model(cpu_model), problem, [KernelConfig("aten::bmm")], hardware)
    np.testing.assert_allclose(predicted, offline, rtol=1e-6)
    np.testing.assert_array_equal(features, featurize(problem, [KernelConfig("aten::bmm")], hardware))


def test_fallbacks_are_counted_and_never_break_compilation(cpu_model, tmp_path):
    # a model for other hardware: stock choices
    other = read_model(cpu_model)
    other.metadata["hardware"]["device_name"] = "NVIDIA H100 80GB HBM3"
    other_path = write_model(tmp_path / "h100.diode", other)
    a, b = torch.randn(2, 16, 8), torch.randn(2, 8, 24)
    with diode_choices(other_path) as choices:
        torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        assert choices.get_stats()["fallbacks"] == {"no_model_for_hardware": 1}

    # an error inside diode: stock choices, counted; with enable_fallback=False it raises
    class Broken(DiodeInductorChoices):
        def _select(self, *args):
            raise RuntimeError("boom")

    from torch._inductor.virtualized import V

    broken = Broken(cpu_model)
    with V.set_choices_handler(broken):
        torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
    assert broken.get_stats()["fallbacks"] == {"error_RuntimeError": 1}
    strict = Broken(cpu_model, enable_fallback=False)
    with V.set_choices_handler(strict), pytest.raises(Exception, match="boom"):
        compile_bmm(a, b)
    # no model at all
    with V.set_choices_handler(DiodeInductorChoices(None)) as _:
        torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))


def test_unsure_problems_widen_the_selection(cpu_model):
    choices = DiodeInductorChoices(cpu_model)
    ranges = choices.metadata["training_data"]["problem_feature_ranges"]
    assert ranges["log2_m"][1] < 8  # trained on M <= 96
    from torch._inductor.virtualized import V

    with V.set_choices_handler(choices):
        compile_bmm(torch.randn(2, 2000, 16), torch.randn(2, 16, 24))  # M = 2000: far outside
    assert choices.get_stats()["unsure_widened"] == 1 and choices.get_stats()["model_selections"] == 1
    assert choices.get_stats()["unsure_out_of_range"] == 1
    assert choices.get_stats()["unsure_benchmarked"] == 0  # the CPU offers this bmm one candidate


def test_unsure_widening_takes_the_best_predicted_with_aten_and_a_default_config(cpu_model):
    """An unsure decision hands Inductor the unsure_top_k best predicted, the best ATen choice and
    the best Triton config of Inductor's DEFAULT list among them. (The CPU's Inductor offers a
    single bmm candidate here, so the selection is called with five predicted candidates directly;
    the features say M = 1, outside the training range.)"""
    from torch_diode.features import FEATURE_NAMES, Candidates
    from torch_diode.inductor.config_space import beyond_default_list, triton_configs
    from torch_diode.selection import Pool, decide

    problem = Problem("bmm", 2, 1, 256, 256, "float32", "float32", "float32")
    default = triton_configs(problem, "DEFAULT")
    beyond = [c for c in triton_configs(problem, "EXHAUSTIVE") if c not in default]
    # candidate 2 is an EXHAUSTIVE config outside the DEFAULT list, candidate 4 ATen's bmm
    candidates = Candidates.of([default[0], default[1], beyond[0], default[2], KernelConfig("aten::bmm")])
    features = np.zeros((5, len(FEATURE_NAMES)), np.float32)
    features[:4, FEATURE_NAMES.index("template_is_triton_mm")] = 1.0  # kinds the contract knows
    features[4, FEATURE_NAMES.index("template_is_aten_mm")] = 1.0
    choices = DiodeInductorChoices(cpu_model)

    pool = Pool(features, candidates.extern, lambda: beyond_default_list(problem, candidates.rows))

    def select(times, top_k, **settings):
        with config.patch(unsure_top_k=top_k, extern_preference=1.0, **settings):
            # the CPU model's data held no Triton timing: a contract of a model whose data did
            contract = dataclasses.replace(choices.contract(), template_kinds=("aten_mm", "triton_mm"))
            decision = decide(problem, pool, np.log(times), choices.policy(), contract)
        chosen, notes = list(decision.chosen), decision.notes()
        assert notes["unsure_widened"] == notes["unsure_out_of_range"] == 1
        assert notes["unsure_benchmarked"] == (top_k > 1), (chosen, notes)
        return chosen

    times = [14.0, 10.0, 12.5, 11.0, 30.0]  # predicted order 1, 3, 2, 0, 4
    assert select(times, 1) == [1]
    assert select(times, 3) == [1, 3, 4]  # ATen takes the last place (never more than unsure_top_k)
    assert select(times, 4) == [1, 3, 2, 4]  # 2, beyond the DEFAULT list, is among the best predicted
    assert select(times, 9) == [1, 3, 2, 0, 4]
    # the first pick stays, even outside the DEFAULT list; ATen and the best DEFAULT config follow
    assert select([14.0, 10.0, 9.0, 11.0, 30.0], 3) == [2, 1, 4]
    # the widened set is not cut by max_selected_configs
    assert select(times, 4, max_selected_configs=2) == [1, 3, 2, 4]


def test_ranges_of_the_problems_dtype_decide_when_recorded(cpu_model):
    """fp32 training data covering only M >= 512 makes an fp32 M=40 problem unsure, though the
    ranges over all dtypes cover it; so does a model whose data held no fp32 at all; a model
    without per-dtype ranges is judged by the global ones."""
    from torch._inductor.virtualized import V

    a, b = torch.randn(3, 40, 24), torch.randn(3, 24, 56)
    for by_dtype, widened in (
        ({"float32": {"log2_m": [9.0, 12.0]}}, 1),
        ({"float16": {"log2_m": [4.0, 12.0]}}, 1),
        (None, 0),
    ):
        choices = DiodeInductorChoices(cpu_model)
        assert "float32" in choices.metadata["training_data"]["problem_feature_ranges_by_dtype"]
        choices.metadata["training_data"]["problem_feature_ranges_by_dtype"] = by_dtype
        with V.set_choices_handler(choices):
            compile_bmm(a, b)
        assert choices.get_stats()["unsure_out_of_range"] == widened, by_dtype


def test_misaligned_problems_widen_the_selection_unless_trained_on(cpu_model):
    """K=18 fp32: A's rows are 72 bytes, not 16-byte aligned; the model saw only aligned rows."""
    from torch._inductor.virtualized import V

    a, b = torch.randn(2, 40, 18), torch.randn(2, 18, 56)
    for seen, widened in ((0, 1), (3, 0), (None, 0)):  # None: a model that does not say
        choices = DiodeInductorChoices(cpu_model)
        assert choices.metadata["training_data"]["misaligned_problems"] == 0
        choices.metadata["training_data"]["misaligned_problems"] = seen
        if seen is None:
            del choices.metadata["training_data"]["misaligned_problems"]
        with V.set_choices_handler(choices):
            torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["model_selections"] == 1 and stats["unsure_misaligned"] == widened == stats["unsure_widened"], (
            stats
        )


def test_slow_held_out_first_picks_of_the_problems_kind_widen_the_selection(cpu_model):
    """A model whose first picks on held-out misaligned problems were 1.2x slower than the best
    (diode train records it) is unsure of a misaligned problem, though trained on some, and sure
    of an aligned one, whatever its held-out picks; the threshold is a setting."""
    from torch._inductor.virtualized import V

    odd = (torch.randn(2, 40, 18), torch.randn(2, 18, 56))  # fp32 K=18: 72-byte rows
    even = (torch.randn(2, 40, 24), torch.randn(2, 24, 56))
    good, bad = {"geomean": 1.01, "problems": 60}, {"geomean": 1.2, "problems": 30}
    cases = [  # (held-out figures, threshold, inputs, expected unsure reason or None)
        ({"aligned": good, "misaligned": bad}, 1.05, odd, "misaligned"),
        ({"aligned": good, "misaligned": bad}, 1.05, even, None),
        ({"aligned": good, "misaligned": bad}, 1.3, odd, None),
        ({"aligned": bad, "misaligned": good}, 1.05, even, None),  # aligned: each problem's loss_risk judges
        ({"aligned": good}, 1.05, odd, None),  # no held-out misaligned problem: no figure
        ({"aligned": good, "misaligned": {"geomean": 1.2, "problems": 19}}, 1.05, odd, None),  # too few to judge
    ]
    for figures, threshold, (a, b), reason in cases:
        choices = DiodeInductorChoices(cpu_model)
        choices.metadata["training_data"]["misaligned_problems"] = 30
        choices.metadata["training_data"]["heldout_top1_slowdown"] = figures
        with config.patch(unsure_heldout_slowdown=threshold), V.set_choices_handler(choices):
            torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["model_selections"] == 1 and stats["unsure_widened"] == (reason is not None), (
            figures,
            threshold,
            stats,
        )
        if reason:
            assert stats[f"unsure_{reason}"] == 1, stats


def test_a_dtype_with_few_training_problems_widens_the_selection(cpu_model):
    """fp32 learnt from fewer than min_dtype_problems problems is unsure; enough of them, or a
    model that does not record its counts, is not."""
    from torch._inductor.virtualized import V

    a, b = torch.randn(3, 40, 24), torch.randn(3, 24, 56)
    for counts, minimum, widened in (({"float32": 39}, 100, 1), ({"float32": 39}, 30, 0), (None, 100, 0)):
        choices = DiodeInductorChoices(cpu_model)
        assert choices.metadata["training_data"]["problems_by_dtype"]["float32"] > 0
        if counts is None:
            del choices.metadata["training_data"]["problems_by_dtype"]
        else:
            choices.metadata["training_data"]["problems_by_dtype"] = counts
        with config.patch(min_dtype_problems=minimum), V.set_choices_handler(choices):
            torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["model_selections"] == 1 and stats["unsure_few_examples"] == widened == stats["unsure_widened"], (
            counts,
            minimum,
        )


@contextmanager
def float32_matmul_precision(precision: str):
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def test_fp32_with_tf32_allowed_widens_the_selection_when_the_model_saw_it_too_rarely(cpu_model):
    """torch.set_float32_matmul_precision("high") lets fp32 GEMMs run TF32 kernels, which a model
    timed on fewer than min_dtype_problems such problems does not know; the decision depends on
    the setting, so the cache keys on it."""
    from torch._inductor.virtualized import V

    a, b = torch.randn(3, 40, 24), torch.randn(3, 24, 56)

    def handler(recorded):
        choices = DiodeInductorChoices(cpu_model)
        assert choices.metadata["training_data"]["tf32_problems"] == 0  # CPU timings: no TF32
        choices.metadata["training_data"]["problems_by_dtype"]["float32"] = 1000  # not few_examples
        if recorded is None:
            del choices.metadata["training_data"]["tf32_problems"]
        else:
            choices.metadata["training_data"]["tf32_problems"] = recorded
        return choices

    # (min_dtype_problems, precision, TF32 problems the model recorded, widened)
    cases = [(0, "high", 0, 1), (0, "highest", 0, 0), (0, "high", 5, 0), (0, "high", None, 1)]
    for bar, precision, recorded, widened in cases + [(10, "high", 9, 1), (10, "high", 10, 0)]:
        choices = handler(recorded)
        with V.set_choices_handler(choices), config.patch(min_dtype_problems=bar):
            with float32_matmul_precision(precision):
                torch.testing.assert_close(compile_bmm(a, b), torch.bmm(a, b))
        stats = choices.get_stats()
        assert stats["unsure_tf32"] == widened and stats["model_selections"] == 1, (precision, recorded, bar, stats)
    choices = handler(0)
    with V.set_choices_handler(choices):
        for precision in ("high", "highest"):  # the other setting: not the cached decision
            with float32_matmul_precision(precision):
                compile_bmm(a, b)
    stats = choices.get_stats()
    assert stats["cache_hits"] == 0 and stats["model_selections"] == 2 and stats["unsure_tf32"] == 1, stats


def run(code, env=None):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout


def test_import_behaviour_on_a_cpu_machine():
    code = """
        import torch
        torch.cuda._lazy_init = lambda *a, **k: (_ for _ in ()).throw(SystemExit("CUDA initialised"))
        import torch._inductor.config as c
        before = c.get_config_copy()
        import torch_diode, torch_diode_models
        after = c.get_config_copy()  # diode's own settings added (None), no other value changed
        print(torch_diode_models.registered_model, {k: after[k] for k in before} == before
              and all(after[k] is None for k in set(after) - set(before)), torch.cuda.is_initialized())
    """
    assert run(code).split() == ["None", "True", "False"]
    assert run(code, {"TORCH_DIODE_NO_AUTOREGISTER": "1"}).split() == ["None", "True", "False"]


def test_config_from_environment():
    out = run(
        "import torch_diode.config as c; "
        "print(c.top_k_configs, c.performance_threshold, c.autoregister, c.cache_predictions)",
        {
            "TORCH_DIODE_TOP_K": "3",
            "TORCH_DIODE_PERFORMANCE_THRESHOLD": "1.1",
            "TORCH_DIODE_NO_AUTOREGISTER": "1",
            "TORCH_DIODE_CACHE_PREDICTIONS": "0",
        },
    )
    assert out.split() == ["3", "1.1", "False", "False"]
    with pytest.raises(AttributeError):
        with config.patch(no_such_setting=1):
            pass


def test_enumerated_allow_tf32_follows_inductor_for_every_dtype(monkeypatch):
    """Inductor's ALLOW_TF32 depends on the tf32 setting and the size, not the dtype, by a rule
    that differs between torch versions; diode's enumeration asks the installed Inductor's
    heuristic (torch 2.11's sets it wherever tf32 is allowed, simulated here), or its picks would
    not convert back (then no enumeration)."""
    from torch._inductor.template_heuristics.registry import get_template_heuristic

    from torch_diode.inductor import config_space
    from torch_diode.inductor.config_space import allow_tf32

    for precision, large in (("high", True), ("highest", False)):
        with float32_matmul_precision(precision):
            for dtype in ("float16", "bfloat16", "float32"):
                assert allow_tf32(Problem("mm", 1, 1024, 1024, 1024, dtype, dtype, dtype)) is large, (precision, dtype)
                assert allow_tf32(Problem("mm", 1, 1024, 256, 1024, dtype, dtype, dtype)) is False
    small = Problem("bmm", 32, 1, 256, 128, "float32", "float32", "float32")
    heuristic = type(get_template_heuristic("triton::bmm", "cuda", "bmm"))
    monkeypatch.setattr(heuristic, "get_extra_kwargs", lambda self, inputs, op: {"ALLOW_TF32": True})
    config_space._inductor_allow_tf32.cache_clear()
    try:
        with float32_matmul_precision("high"):
            assert allow_tf32(small) is True
    finally:
        config_space._inductor_allow_tf32.cache_clear()


def test_dynamic_shapes_are_decided_over_their_range(cpu_model):
    """torch.compile(dynamic=True), and the automatic dynamic shapes of a function called with a
    second shape: the handler decides each graph over the sizes it will run (selection.dynamic),
    recorded at the sizes Inductor hints (one of the shapes it ran), falls back nowhere, and the
    compiled function is right for every shape."""
    shapes = [(3, 40, 24, 56), (2, 33, 24, 57), (4, 64, 16, 8)]
    seen = {f"bmm {b}x{m}x{n}x{k} float32 NN" for b, m, k, n in shapes}
    with diode_choices(cpu_model) as choices, inductor_config.patch(CPU_BMM):
        for dynamic in (True, None):
            torch._dynamo.reset()
            choices.reset_stats()
            compiled = torch.compile(torch.bmm, dynamic=dynamic)
            for b, m, k, n in shapes:
                a, w = torch.randn(b, m, k), torch.randn(b, k, n)
                torch.testing.assert_close(compiled(a, w), torch.bmm(a, w))
            stats = choices.get_stats()
            assert stats["fallbacks_total"] == 0 and stats["model_selections"] >= 1, (dynamic, stats)
            decided = {d["problem"] for d in choices.decisions}
            assert decided and decided <= seen, (dynamic, decided)
            assert stats["dynamic_decisions"] >= 1, stats
            assert all(d["scenarios"] > 1 for d in choices.decisions if "sizes" in d)


def test_a_dynamic_gemm_is_judged_within_the_bounds_mark_dynamic_gives(cpu_model):
    """mark_dynamic(min=, max=) bounds the sizes a dynamic GEMM is judged at; the decision records
    each symbol's hint and bounds. With dynamic decisions off the GEMM is decided at its hint."""
    a, w = torch.randn(3, 40, 24), torch.randn(3, 24, 56)
    for on in (True, False):
        with config.patch(dynamic_decisions=on), diode_choices(cpu_model) as choices, inductor_config.patch(CPU_BMM):
            torch._dynamo.reset()
            torch._dynamo.mark_dynamic(a, 1, min=8, max=512)
            torch.testing.assert_close(torch.compile(torch.bmm)(a, w), torch.bmm(a, w))
            stats, decisions = choices.get_stats(), list(choices.decisions)
        assert stats["fallbacks_total"] == 0 and decisions, stats
        if not on:
            assert stats["dynamic_decisions"] == 0 and "sizes" not in decisions[-1]
            continue
        assert stats["dynamic_decisions"] == 1, stats
        (sizes,) = decisions[-1]["sizes"].values()
        assert sizes == [40, 8, 512], decisions[-1]
        # the hint, both bounds and the default distribution's sizes between them
        assert decisions[-1]["scenarios"] == 2 + sum(8 < s < 512 and s != 40 for s in config.dynamic_sizes) + 1
