"""The user's compile caches keep working with diode installed: a second process compiling the
same function hits Inductor's FX-graph cache and logs no traceback, while another model (by
content) or another diode setting misses. Both ways torch keys the installed handler are run:
asking ``inductor_choices_class`` for ``uuid()`` (torch 2.13) and pickling it (torch 2.11, where a
lambda made Inductor log "Failed to pickle cache key" and bypass the cache). The GPU version is
tests/gpu/test_fx_graph_cache_gpu.py."""

import fx_cache_child as child
import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("pickled_key", [False, True], ids=["uuid_key", "pickled_key"])
def test_a_second_process_hits_the_fx_graph_cache(cpu_model, tmp_path, pickled_key):
    spec = {
        "device": "cpu",
        "op": "bmm",
        "inductor": {"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
        "pickled_key": pickled_key,
    }
    child.check_cache_use(spec, str(cpu_model), str(child.other_model(cpu_model, tmp_path)), tmp_path / "cache")
