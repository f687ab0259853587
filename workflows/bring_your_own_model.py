"""Bring your own model: record its GEMMs while torch.compile autotunes them, train on that
(with the shipped data where it matches the GPU), install the result, compile again.

    python workflows/bring_your_own_model.py --work /tmp/byo            # GPU if there is one
    python workflows/bring_your_own_model.py --work /tmp/byo --device cpu

On a CPU, Inductor autotunes batched matmuls between its C++ template and ATen, so the example
model here does its work in bmm; on a GPU every mm/addmm/bmm of the model is recorded with all
of Inductor's Triton configs and ATen. Replace `MyModel` and `example_inputs` with your own.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TORCH_DIODE_NO_AUTOREGISTER", "1")  # this script installs diode itself

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402

import torch_diode  # noqa: E402
from torch_diode.dataset_io import load_datasets  # noqa: E402
from torch_diode.model_file import write_model  # noqa: E402
from torch_diode.training.train import TrainConfig, train_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class MyModel(nn.Module):
    """Stand-in for your model: two heads of attention-style batched matmuls and a projection."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Parameter(torch.randn(heads, dim, 3 * dim // heads) / dim**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [tokens, dim]
        h = torch.bmm(x.expand(self.heads, *x.shape), self.qkv)
        q, k, v = h.chunk(3, dim=-1)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        return torch.bmm(att, v).transpose(0, 1).reshape(x.shape[0], -1)


def example_inputs(device: str, dtype: torch.dtype) -> list[torch.Tensor]:
    return [torch.randn(tokens, 64, device=device, dtype=dtype) for tokens in (32, 48, 80)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="folder for the recorded data and the model")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    gpu = args.device.startswith("cuda")
    dtype = torch.float16 if gpu else torch.float32
    model = MyModel(64, 2).to(args.device, dtype).eval()
    autotune = {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON" if gpu else "CPP,ATEN"}

    # 1. record: compile the model the way you run it, with max-autotune, inside collect()
    print("== 1. recording the model's GEMMs while Inductor autotunes them")
    with torch_diode.collect(work / "my_model.json") as col, inductor_config.patch(autotune), torch.no_grad():
        for x in example_inputs(args.device, dtype):
            torch._dynamo.reset()
            torch.compile(model, dynamic=False)(x)
    print(f"   {col.stats['gemms']} GEMMs, {col.stats['choices']} timed choices -> {work / 'my_model.json'}")

    # 2. train: your data, plus the shipped data of this GPU if there is any
    sources = [work / "my_model.json"]
    if gpu and "H100" in torch.cuda.get_device_name():
        sources.append(ROOT / "data" / "h100" / "train")
    print(f"== 2. training on {', '.join(map(str, sources))}")
    trained, report = train_model(
        load_datasets(sources), TrainConfig(num_epochs=args.epochs, validation_fraction=0.0, seed=0)
    )
    path = write_model(work / "my_model.diode", trained)
    print(f"   model written to {path}")

    # 3. use it: install diode's choice handler with your model, compile again
    print("== 3. compiling again with diode choosing the kernels")
    with (
        torch_diode.diode_choices(path) as choices,
        inductor_config.patch(
            max_autotune_gemm=True, max_autotune_gemm_backends=autotune["max_autotune_gemm_backends"]
        ),
        torch.no_grad(),
    ):
        for x in example_inputs(args.device, dtype):
            torch._dynamo.reset()
            out = torch.compile(model, dynamic=False)(x)
            torch.testing.assert_close(out, model(x), atol=2e-2, rtol=2e-2)
        print(f"   outputs match eager; diode's stats: {choices.get_stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
