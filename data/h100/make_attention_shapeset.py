"""Writes src/torch_diode/shapesets/attention_odd_tokens.json: the attention bmm of public models
whose token counts are not multiples of 8 (so their operands' rows are not 16-byte aligned).

    python data/h100/make_attention_shapeset.py

Sizes come from each model's published configuration (tokens = patches + [CLS] where it has one,
heads, head_dim). No entry has the (M, N, K) of a GEMM that benchmarks/e2e.py measures (its shape
list and its models), so those stay held out; tests/collection/test_shapes.py checks it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "torch_diode" / "shapesets" / "attention_odd_tokens.json"

# (model, tokens, heads, head_dim, batches, dtype)
VISION = [
    ("ViT-B/32 @224", 50, 12, 64, (1, 32), "float16"),
    ("CLIP ViT-L/14 @224", 257, 16, 64, (1, 32), "float16"),
    ("ViT-H/14 @224", 257, 16, 80, (1, 16), "bfloat16"),
    ("ViT-B/16 @384", 577, 12, 64, (1, 16), "float16"),
    ("CLIP ViT-L/14 @336", 577, 16, 64, (1, 8), "bfloat16"),
    ("DINOv2 ViT-S/14 @518", 1370, 6, 64, (1, 8), "float16"),
    ("DINOv2 ViT-g/14 @224", 257, 24, 64, (1, 8), "bfloat16"),
    ("SigLIP so400m/14 @384", 729, 16, 72, (1, 8), "bfloat16"),
    ("EVA02-L/14 @448", 1025, 16, 64, (1, 4), "float16"),
    ("CLIP text encoder (ViT-B/32)", 77, 8, 64, (1, 64), "float16"),
    ("CLIP text encoder (ViT-L/14)", 77, 12, 64, (1, 64), "float16"),
    ("Whisper-base encoder", 1500, 8, 64, (1, 8), "float16"),
]
# Swin-T window attention: 7x7 = 49 tokens, head_dim 32; B = batch x windows x heads
SWIN = [("Swin-T stage 1", 64, 3), ("Swin-T stage 3", 4, 12)]
# Stable Diffusion 1.5 UNet cross-attention: image tokens attend to 77 text tokens, 8 heads
SD = [(4096, 40), (1024, 80), (256, 160)]
# decode attention over a KV cache of odd length: (model, heads, head_dim)
DECODE = [("Llama-2-7B", 32, 128), ("Phi-2", 32, 80), ("GPT-2", 12, 64), ("Mistral-7B (KV repeated)", 32, 128)]

# every (M, N, K) that benchmarks/e2e.py measures: its shape list and its models' GEMMs
E2E_MODEL_MNK = {
    (6304, 2304, 768), (197, 197, 64), (197, 64, 197), (6304, 768, 768), (6304, 3072, 768), (6304, 768, 3072),
    (8, 2048, 2048), (1, 1025, 128), (1, 128, 1025), (8, 5632, 2048), (8, 2048, 5632),
    (2048, 2048, 2048), (2048, 2048, 128), (2048, 128, 2048), (2048, 5632, 2048), (2048, 2048, 5632),
    (512, 4096, 1024), (512, 4096, 4096), (512, 1024, 4096),
}


def e2e_mnk() -> set[tuple[int, int, int]]:
    shapes = json.loads((ROOT / "benchmarks" / "e2e_shapes.json").read_text())
    return E2E_MODEL_MNK | {(s["M"], s["N"], s["K"]) for s in shapes}


def attention(model: str, b: int, tokens_q: int, tokens_k: int, head_dim: int, dtype: str, note: str) -> list[dict]:
    common = {"model": model, "op": "bmm", "B": b, "dtype": dtype}
    return [
        {**common, "layer": f"attn scores q @ k^T ({note})", "M": tokens_q, "N": tokens_k, "K": head_dim,
         "transpose_a": False, "transpose_b": True},
        {**common, "layer": f"attn values p @ v ({note})", "M": tokens_q, "N": head_dim, "K": tokens_k,
         "transpose_a": False, "transpose_b": False},
    ]


def entries() -> list[dict]:
    rng = random.Random(11)
    out: list[dict] = []
    for model, tokens, heads, hd, batches, dtype in VISION:
        for batch in batches:
            out += attention(model, batch * heads, tokens, tokens, hd, dtype, f"batch {batch}, {tokens} tokens")
    for model, windows, heads in SWIN:
        for batch in (1, 32):
            out += attention(model, batch * windows * heads, 49, 49, 32, "float16", f"batch {batch}, 7x7 windows")
    for tokens, hd in SD:
        out += attention("Stable Diffusion 1.5 UNet", 2 * 8, tokens, 77, hd, "float16",
                         f"cross-attention, batch 1 with guidance, {tokens} image tokens")
    for model, heads, hd in DECODE:
        for _ in range(3):
            length = rng.choice([n for n in range(129, 4097) if n % 8])
            batch = rng.choice((1, 4, 16))
            out += attention(model, batch * heads, 1, length, hd, "bfloat16" if hd != 64 else "float16",
                             f"decode, batch {batch}, {length} cached tokens")
    held_out = e2e_mnk()
    return [e for e in out if (e["M"], e["N"], e["K"]) not in held_out]


def main() -> None:
    data = {
        "name": "attention_odd_tokens",
        "description": "Non-fused attention bmm of public models whose token counts are not multiples of 8: "
                       "vision transformers with a [CLS] token (ViT-B/32, CLIP/ViT-L/14 and ViT-H/14 at 224, ViT-B/16 "
                       "and CLIP-L/14 at 384/336, DINOv2, EVA02-L at 448), SigLIP (729 patches), CLIP text (77 tokens), "
                       "Whisper's encoder (1500 frames), Swin-T's 7x7 windows, Stable Diffusion 1.5's cross-attention to "
                       "77 text tokens, and decode steps over KV caches of odd length. B = batch x heads (x windows). "
                       "Generated by data/h100/make_attention_shapeset.py, which leaves out every (M, N, K) that "
                       "benchmarks/e2e.py measures.",
        "entries": entries(),
    }
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {len(data['entries'])} entries")


if __name__ == "__main__":
    main()
