"""The code of the torch.compile integration guide's examples, verbatim, shared by the CPU tests
(tests/integration/test_guide_examples.py) and the GPU ones (tests/gpu/test_guide_examples_gpu.py).
Names an example leaves to the reader (``dataloader``, ``input_tensor``, ``my_function``) are
defined by the tests in code run first. The tests load this file by path (they are not a package)."""

# The environment of an example's process: every compile lowers its graph again and asks the
# handler (no FX-graph or AOT-autograd cache hit), while Inductor keeps its compiled C++ kernels and
# CPU ISA checks in its cache folder (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 would build them again in
# every process)
FRESH_GRAPHS_ENV = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}

COMPLETE_EXAMPLE = """
import torch
import torch_diode_models  # Auto-registers the best model for your hardware
from torch._inductor import config

# Configure PyTorch to use Diode acceleration
config.max_autotune_gemm_backends = "DIODE"
config.fast_autotune = True

# Your existing PyTorch code - no changes needed!
def matmul_function(a, b):
    return torch.mm(a, b)

# Compile with torch.compile - now accelerated by Diode
compiled_fn = torch.compile(matmul_function, mode="max-autotune")

# Use as normal
a = torch.randn(1024, 2048, device="cuda", dtype=torch.float16)
b = torch.randn(2048, 4096, device="cuda", dtype=torch.float16)

result = compiled_fn(a, b)  # Fast compilation + optimal performance
"""

CONFIGURATION_OPTIONS = """
from torch._inductor import config

# Basic Diode configuration
config.max_autotune_gemm_backends = "DIODE"
config.fast_autotune = True

# Advanced options
config.diode_fallback_to_autotune = True   # Fallback for unsupported cases
config.diode_confidence_threshold = 0.95   # Minimum prediction confidence
config.diode_cache_predictions = True      # Cache predictions for repeated sizes
"""

TRAINING_WORKFLOW = """
import torch
import torch.nn as nn
import torch_diode_models
from torch._inductor import config

# Enable Diode acceleration
config.max_autotune_gemm_backends = "DIODE"
config.fast_autotune = True

class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(1024, 2048)
        self.linear2 = nn.Linear(2048, 1024)

    def forward(self, x):
        x = self.linear1(x)
        x = torch.relu(x)
        return self.linear2(x)

model = MyModel().cuda()

# Compile with Diode acceleration
compiled_model = torch.compile(model, mode="max-autotune")

# Training loop - faster compilation on first run
optimizer = torch.optim.Adam(model.parameters())
for batch in dataloader:
    optimizer.zero_grad()
    output = compiled_model(batch)  # Fast compilation + optimal performance
    loss = criterion(output, targets)
    loss.backward()
    optimizer.step()
"""

# torch.compile refuses a ScriptModule (the guide's torch.jit.load("my_model.pt")) in torch 2.10
# and later, with or without diode: the tests define ``model`` as the eager module, as torch's
# error message advises, and leave that line out.
INFERENCE_WORKFLOW = """
import torch
import torch_diode_models
from torch._inductor import config

# Configure for inference
config.max_autotune_gemm_backends = "DIODE"
config.fast_autotune = True
config.triton.cudagraphs = True  # Enable CUDA graphs for even better performance

# Compile with minimal warmup time
compiled_model = torch.compile(model, mode="max-autotune")

# First inference compiles quickly thanks to Diode
with torch.no_grad():
    output = compiled_model(input_tensor)
"""

COMPILATION_ERRORS = """
# Disable Diode temporarily
from torch._inductor import config
config.max_autotune_gemm_backends = "TRITON"
config.fast_autotune = False
"""

DEBUGGING = """
import torch_diode_models

# Enable detailed logging
torch_diode_models.set_log_level("DEBUG")

# Profile model predictions
with torch_diode_models.profile_predictions():
    compiled_fn = torch.compile(my_function, mode="max-autotune")
    result = compiled_fn(input_tensor)

# View prediction statistics
stats = torch_diode_models.get_prediction_stats()
print(f"Predictions made: {stats['total_predictions']}")
print(f"Average confidence: {stats['avg_confidence']:.3f}")
print(f"Fallbacks to autotune: {stats['fallbacks']}")
"""


def on_cpu(code: str) -> str:
    """An example's code with its GPU tensors on the CPU in float32 (the only change)."""
    return (
        code.replace('device="cuda"', 'device="cpu"').replace(".cuda()", "").replace("torch.float16", "torch.float32")
    )
