"""The whole models benchmarks/e2e.py measures beside single GEMMs: a Llama-style decoder block (at
prefill and at decode over a KV cache), a ViT-B block and an MLP. benchmarks/e2e_dynamic.py runs the
decoder block over a dynamic token count; benchmarks/compile_breakdown.py ``--models`` compiles these."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class DecoderBlock(nn.Module):
    """A Llama-style block: RMSNorm, q/k/v/o projections, attention as two batched matmuls
    (optionally over a KV cache), SwiGLU MLP."""

    def __init__(self, hidden: int = 2048, heads: int = 16, ffn: int = 5632):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(hidden, ffn, bias=False), nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        self.n1, self.n2 = nn.RMSNorm(hidden), nn.RMSNorm(hidden)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor | None = None, v_cache: torch.Tensor | None = None):
        b, s, h = x.shape
        y = self.n1(x)
        split = lambda t: (
            t.view(b, -1, self.heads, self.head_dim).transpose(1, 2).reshape(b * self.heads, -1, self.head_dim)
        )
        q, k, v = split(self.q(y)), split(self.k(y)), split(self.v(y))
        if k_cache is not None:
            k, v = torch.cat([k_cache, k], dim=1), torch.cat([v_cache, v], dim=1)
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim), dim=-1)
        o = torch.bmm(att, v).view(b, self.heads, s, self.head_dim).transpose(1, 2).reshape(b, s, h)
        x = x + self.o(o)
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class ViTBlock(nn.Module):
    def __init__(self, dim: int = 768, heads: int = 12, mlp: int = 3072):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, mlp), nn.Linear(mlp, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        hd = d // self.heads
        qkv = (
            self.qkv(self.n1(x)).view(b, s, 3, self.heads, hd).permute(2, 0, 3, 1, 4).reshape(3, b * self.heads, s, hd)
        )
        att = torch.softmax(torch.bmm(qkv[0], qkv[1].transpose(1, 2)) * hd**-0.5, dim=-1)
        o = torch.bmm(att, qkv[2]).view(b, self.heads, s, hd).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


def models(device: str) -> list[tuple[str, nn.Module, tuple]]:
    """(label, module, inputs) of each whole model on ``device``, in eval mode, its inputs drawn
    with seed 0; the decoder block's two rows share one module."""
    bf16, fp16 = torch.bfloat16, torch.float16
    g = torch.Generator(device="cpu").manual_seed(0)
    rnd = lambda *shape, dtype: torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
    dec = DecoderBlock().to(device, bf16).eval()
    heads, hd = dec.heads, dec.head_dim
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024))
    return [
        ("decoder block, prefill 1x2048 tokens (bf16)", dec, (rnd(1, 2048, 2048, dtype=bf16),)),
        (
            "decoder block, decode 8 sequences, 1024 cached (bf16)",
            dec,
            (rnd(8, 1, 2048, dtype=bf16), rnd(8 * heads, 1024, hd, dtype=bf16), rnd(8 * heads, 1024, hd, dtype=bf16)),
        ),
        ("ViT-B/16 block, batch 32 (fp16)", ViTBlock().to(device, fp16).eval(), (rnd(32, 197, 768, dtype=fp16),)),
        ("MLP 1024-4096-4096-1024, batch 512 (fp16)", mlp.to(device, fp16).eval(), (rnd(512, 1024, dtype=fp16),)),
    ]
