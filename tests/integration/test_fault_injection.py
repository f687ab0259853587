"""Faults inside diode never reach torch.compile: a broken model (predictions NaN, +inf, -inf,
huge, or an engine that raises) and exceptions injected into each of the handler's paths (the full
path, the decision cache, diode's own enumeration, widening, recording the decision) give
Inductor's stock candidates, counted by reason in the handler's and the process's statistics,
through real torch.compile on the CPU; with ``enable_fallback=False`` they raise.

On the CPU Inductor offers no Triton template, so diode's enumeration path is entered by
patching diode's own functions (:func:`enumerating`); tests/gpu/test_fault_injection_gpu.py
drives the real one on a GPU.
"""

import hashlib
import math
import shutil

import numpy as np
import pytest
import torch
from broken_models import FAULTS, BrokenEngine, broken
from torch._inductor import config as inductor_config
from torch._inductor.virtualized import V

from torch_diode import config
from torch_diode.hardware import detect_hardware
from torch_diode.inductor import config_space
from torch_diode.integration import choices as choices_module
from torch_diode.integration.choices import DiodeInductorChoices
from torch_diode.integration.stats import profile_predictions
from torch_diode.model_file import read_model, write_model
from torch_diode.predict import load_model, predict_log_time_us
from torch_diode.types import KernelConfig, Problem

pytestmark = pytest.mark.slow
# as in test_choices.py: every compile asks the handler, the CPP template's C++ kernels stay cached
CPU_BMM = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "CPP,ATEN",
    "fx_graph_cache": False,
    "autotune_local_cache": False,
}


@pytest.fixture(autouse=True)
def _enough_examples():
    """The test model learnt from 3 problems: judged as one with enough examples (else every
    problem would be unsure); the widening test makes its problem unsure by its size."""
    with config.patch(min_dtype_problems=0):
        yield


def inputs(m=40):
    return torch.randn(3, m, 24), torch.randn(3, 24, 56)


def compile_bmm(choices, a, b):
    """torch.bmm compiled under max-autotune with ``choices`` as Inductor's choice handler."""
    torch._dynamo.reset()
    with V.set_choices_handler(choices), inductor_config.patch(CPU_BMM):
        return torch.compile(torch.bmm)(a, b)


def assert_falls_back(choices, reason: str, a=None, b=None, **expected_counts):
    """Compiles, checks the result is eager's and that one fallback of ``reason`` is counted by
    the handler and process-wide."""
    a, b = (a, b) if a is not None else inputs()
    with profile_predictions() as process:
        torch.testing.assert_close(compile_bmm(choices, a, b), torch.bmm(a, b))
    stats = choices.get_stats()
    assert stats["fallbacks"] == {reason: 1} and stats["model_selections"] == 0, stats
    assert process["fallbacks"] == 1 and process["total_predictions"] == 0, process
    for name, count in expected_counts.items():
        assert stats[name] == count, (name, stats)


@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_model_gives_stock_choices_on_the_full_path(cpu_model, fault):
    assert_falls_back(broken(cpu_model, fault), FAULTS[fault][1])


@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_model_raises_with_fallback_off(cpu_model, fault):
    strict = broken(cpu_model, fault, enable_fallback=False)
    with pytest.raises(Exception, match=FAULTS[fault][1]):
        compile_bmm(strict, *inputs())
    assert strict.get_stats()["fallbacks"] == {FAULTS[fault][1]: 1}  # counted once, then raised


@pytest.fixture
def enumerating(monkeypatch):
    """Diode's enumeration path on the CPU: the problem counts as enumerable for the Triton
    template, which the CPU does not offer (so none of its configs is enumerated), with a stand-in
    probe candidate: the decision is among Inductor's real candidates of the other templates
    (ATen), which the path takes out of their generators first."""
    monkeypatch.setattr(DiodeInductorChoices, "_enumerable", lambda self, *args: "triton::bmm")
    monkeypatch.setattr(choices_module, "probe", lambda *args: object())


def test_the_enumeration_path_decides_on_the_cpu_stand_in(cpu_model, enumerating):
    """The stand-in does reach the enumeration path: a sound model decides there."""
    choices = DiodeInductorChoices(cpu_model)
    a, b = inputs()
    torch.testing.assert_close(compile_bmm(choices, a, b), torch.bmm(a, b))
    stats = choices.get_stats()
    assert stats["enumerated"] == stats["model_selections"] == 1 and stats["fallbacks_total"] == 0, stats


@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_model_gives_stock_choices_on_the_enumeration_path(cpu_model, enumerating, fault):
    assert_falls_back(broken(cpu_model, fault), FAULTS[fault][1], enumerated=0)


def test_an_error_recording_an_enumerated_decision_gives_stock_choices(cpu_model, enumerating):
    """An exception once the enumerated decision is made (recording it: the statistics) reaches
    no compile, and the candidates the path took from Inductor's generators are handed back."""
    choices = DiodeInductorChoices(cpu_model)

    def overflow(*args):
        raise OverflowError("math range error")

    choices.stats.decided = overflow
    assert_falls_back(choices, "error_OverflowError")
    with pytest.raises(Exception, match="math range error"):
        strict = DiodeInductorChoices(cpu_model, enable_fallback=False)
        strict.stats.decided = overflow
        compile_bmm(strict, *inputs())


def test_the_cache_path_falls_back_on_errors_and_a_broken_model(cpu_model, monkeypatch):
    """A decision cached from a sound model answers without predictions; an exception in the cache
    path and a stale entry decided again by a broken model both give stock choices."""
    choices = DiodeInductorChoices(cpu_model)
    a, b = inputs()
    compile_bmm(choices, a, b)
    assert choices.get_stats()["model_selections"] == 1
    choices.engine = BrokenEngine(choices.engine, math.nan)
    torch.testing.assert_close(compile_bmm(choices, a, b), torch.bmm(a, b))
    assert choices.get_stats()["cache_hits"] == 1 and choices.get_stats()["fallbacks_total"] == 0

    ((key, (configs, n)),) = choices._cache.items()
    choices._cache[key] = ([KernelConfig("aten::not_this_one")] * len(configs), n)
    choices.reset_stats()
    assert_falls_back(choices, "bad_prediction", a, b, cache_stale=1, cache_hits=0)

    def lost(*args, **kwargs):
        raise KeyError("lost")

    choices.reset_stats()
    monkeypatch.setattr(choices_module, "materialise", lost)
    choices._cache[key] = (configs, n)
    assert_falls_back(choices, "error_KeyError", a, b, cache_hits=0)


def test_an_error_while_widening_gives_stock_choices(cpu_model, monkeypatch):
    """M = 2000 is outside the model's training range: the unsure rule widens the choice, which
    asks which candidates are outside Inductor's DEFAULT list."""

    def fails(*args):
        raise ValueError("widening failed")

    monkeypatch.setattr(config_space, "beyond_default_list", fails)  # the pool computes it where a decision widens
    assert_falls_back(
        DiodeInductorChoices(cpu_model), "error_ValueError", torch.randn(2, 2000, 16), torch.randn(2, 16, 24)
    )


def test_a_replaced_model_file_gives_the_new_weights(cpu_model, tmp_path):
    """Engines are cached by the file's content: a model file replaced in a running process gives
    the new weights, and the handler's cache key (its checksum) is the new file's."""
    path = tmp_path / "model.diode"
    shutil.copy(cpu_model, path)
    problem, configs = Problem("bmm", 3, 40, 56, 24, "float32", "float32", "float32"), [KernelConfig("aten::bmm")]
    hardware = detect_hardware("cpu")
    first = DiodeInductorChoices(path)
    before = predict_log_time_us(load_model(path), problem, configs, hardware)
    model = read_model(path)
    model.target_mean += 1.0  # every prediction one ln-unit slower
    write_model(path, model)
    second = DiodeInductorChoices(path)
    after = predict_log_time_us(load_model(path), problem, configs, hardware)
    np.testing.assert_allclose(after - before, 1.0, rtol=1e-5)
    np.testing.assert_allclose(predict_log_time_us(second.engine, problem, configs, hardware), after)
    assert first.checksum == hashlib.sha256(cpu_model.read_bytes()).hexdigest()
    assert second.checksum == hashlib.sha256(path.read_bytes()).hexdigest() != first.checksum
    assert second.uuid() != first.uuid() and first.checksum in first.uuid()
    # the same content under another name: the same engine
    assert load_model(shutil.copy(path, tmp_path / "copy.diode")) is second.engine


def test_a_fallback_hands_inductor_the_users_search_space(cpu_model, tmp_path):
    """A GEMM diode does not decide (no model for this hardware, a fault) gets the candidates
    generated in the user's ``max_autotune_gemm_search_space``, as without diode, never those of
    diode's EXHAUSTIVE ``candidate_pool`` (thousands of benchmarks on a GPU)."""

    class Recording(DiodeInductorChoices):
        def get_ktc(self, *args, **kwargs):
            for ktc in super().get_ktc(*args, **kwargs):
                self.space[id(ktc)] = inductor_config.max_autotune_gemm_search_space
                yield ktc

        def _finalize_template_configs(self, *args, **kwargs):
            out = super()._finalize_template_configs(*args, **kwargs)
            self.returned.extend(self.space.get(id(ktc)) for ktc in out)
            return out

    other = read_model(cpu_model)
    other.metadata["hardware"]["device_name"] = "NVIDIA H100 80GB HBM3"
    elsewhere = Recording(write_model(tmp_path / "h100.diode", other))
    faulty = Recording(cpu_model)  # a fault while deciding, after diode's pool was generated
    faulty.engine = BrokenEngine(faulty.engine, FAULTS["raises"][0])
    for choices, reason in ((elsewhere, "no_model_for_hardware"), (faulty, FAULTS["raises"][1])):
        choices.space, choices.returned = {}, []
        with inductor_config.patch(max_autotune_gemm_search_space="DEFAULT"):
            assert_falls_back(choices, reason)
        assert choices.returned and set(choices.returned) == {"DEFAULT"}, (reason, choices.returned)
