"""With diode installed on the GPU (torch 2.11 there: Inductor pickles ``inductor_choices_class``
into its FX-graph cache key), a second process compiling the same GEMM hits the FX-graph cache and
logs no traceback ("Failed to pickle cache key" before the handler was picklable), while another
model or another diode setting misses. The CPU version is tests/integration/test_fx_graph_cache.py.
Needs a GPU with a shipped model (H100, H200)."""

from pathlib import Path

import fx_cache_child as child
import pytest
from gpu_models import shipped_model_for_this_gpu
from torch._inductor import config as inductor_config

from torch_diode.registry import resolve_model

pytestmark = pytest.mark.gpu


def test_a_second_process_hits_the_fx_graph_cache(tmp_path):
    name = shipped_model_for_this_gpu()
    if not hasattr(inductor_config, "inductor_choices_class"):
        pytest.skip("this torch has no inductor_choices_class: the FX-graph cache is off while diode is installed")
    model = str(resolve_model(name))
    spec = {"device": "cuda", "op": "mm", "inductor": {}, "pickled_key": False}
    child.check_cache_use(spec, model, str(child.other_model(Path(model), tmp_path)), tmp_path / "cache")
