"""Writes src/torch_diode/shapesets/realmodels_heldout.json: the GEMMs of public models that the
model and the end-to-end benchmark are judged on. No training data may hold them: `diode train`
refuses a dataset holding one, and `diode collect` / `create-validation` never draw one.

    python data/h100/make_realmodels_shapeset.py

Every size comes from the model's published configuration (its Hugging Face ``config.json`` or
paper), cited per family in ``FAMILIES``. Modelling rules:
- ``nn.Linear(K, N)`` on ``M`` tokens is ``x @ W^T``: mm (no bias) or addmm (bias), layout NT.
- eager attention is bmm with B = batch x heads: scores ``q @ k^T`` (M = query tokens, N = key
  tokens, K = head_dim, NT) and values ``p @ v`` (M = query tokens, N = head_dim, K = key
  tokens, NN); grouped-query models repeat their KV heads first, so B counts the query heads.
- BLOOM's ALiBi scores are ``alibi.baddbmm(q, k)`` with k copied to (B, head_dim, keys): NN, bias
  (B, 1, keys); GPT-2's ``reorder_and_upcast_attn`` path is an fp32 ``baddbmm(empty, q, k, beta=0)``.
- decode steps have M = batch; lm_head at prefill computes every token's logits (a plain
  forward), at decode one token's per sequence.
- MoE experts loop over the experts (mm, M = the tokens routed to one expert: an uneven share of
  tokens x top-k / experts), or run as one bmm over the experts' capacity-padded token slots
  with weights stored (experts, K, N) (NN).
- training backward of a Linear: grad_weight = grad_out^T @ x (TN); MLP-Mixer's token mixing
  applies a Linear to a transposed activation (TT).
- conv-as-GEMM is out of scope: CNNs contribute their classifier heads and ConvNeXt's pointwise
  Linear layers (channels-last).

No problem (op, B, M, N, K, dtypes, layout) of another shipped shapeset or of
benchmarks/e2e_shapes.json is kept; each problem needs at most MAX_GFLOP.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHAPESETS = ROOT / "src" / "torch_diode" / "shapesets"
OUT = SHAPESETS / "realmodels_heldout.json"
NAME = "realmodels_heldout"
MAX_GFLOP = 2000.0

F16, BF16, F32 = "float16", "bfloat16", "float32"

# family -> the published configuration its sizes come from
FAMILIES = {
    "Qwen2.5-7B": "hidden 3584, intermediate 18944, 28 heads / 4 KV heads x 128, vocab 152064, q/k/v with bias",
    "Qwen2.5-0.5B": "hidden 896, intermediate 4864, 14 heads / 2 KV heads x 64, vocab 151936, q/k/v with bias",
    "Gemma-2-2B": "hidden 2304, intermediate 9216, 8 heads / 4 KV heads x 256, vocab 256000",
    "Gemma-7B": "hidden 3072, intermediate 24576, 16 heads x 256, vocab 256000",
    "Llama-3.1-70B": "hidden 8192, intermediate 28672, 64 heads / 8 KV heads x 128, vocab 128256",
    "Llama-3.2-3B": "hidden 3072, intermediate 8192, 24 heads / 8 KV heads x 128, vocab 128256",
    "Mistral-7B-v0.3": "hidden 4096, vocab 32768 (its blocks are Mistral-7B-v0.1's)",
    "Mistral-Nemo-12B": "hidden 5120, intermediate 14336, 32 heads / 8 KV heads x 128, vocab 131072",
    "Phi-3-mini-4k": "hidden 3072, intermediate 8192, 32 heads x 96, fused qkv_proj 9216 and gate_up_proj 16384, "
                     "vocab 32064",
    "GPT-NeoX-20B": "hidden 6144, intermediate 24576, 64 heads x 96, fused query_key_value with bias, vocab 50432",
    "Falcon-7B": "hidden 4544, 71 heads x 64, multi-query fused qkv 4672, MLP 18176, vocab 65024",
    "OPT-1.3B": "hidden 2048, ffn 8192, 32 heads x 64, linears with bias, vocab 50272",
    "SmolLM2-360M": "hidden 960, intermediate 2560, 15 heads / 5 KV heads x 64, vocab 49152",
    "BLOOM-560m": "hidden 1024, 16 heads x 64, ALiBi baddbmm scores, linears with bias, vocab 250880",
    "GPT-2 Medium": "hidden 1024, 16 heads x 64, Conv1D addmm (weight (K, N)), reorder_and_upcast_attn fp32 baddbmm",
    "Mixtral-8x7B": "hidden 4096, 8 experts of intermediate 14336, top-2, router 4096 -> 8",
    "DeepSeek-MoE-16B": "hidden 2048, 64 routed experts of intermediate 1408, top-6, 2 shared experts, router 2048 -> 64",
    "Qwen1.5-MoE-A2.7B": "hidden 2048, 60 experts of intermediate 1408, top-4, shared expert 5632, router 2048 -> 60",
    "OLMoE-1B-7B": "hidden 2048, 64 experts of intermediate 1024, top-8",
    "Stable Diffusion XL UNet": "transformer levels 640 ch (10 heads x 64) at 64x64 and 1280 ch (20 heads x 64) at 32x32 "
                                "latents for 1024px, cross-attention to 77 tokens of 2048-d text, GEGLU FF 4x",
    "Stable Diffusion 1.5 UNet": "320/640/1280 ch, cross-attention to 77 tokens of 768-d CLIP text, GEGLU FF 4x",
    "DiT-XL/2": "hidden 1152, 16 heads x 72, MLP 4608, 256 tokens at 256px, adaLN 1152 -> 6912",
    "PixArt-alpha-1024": "hidden 1152, 16 heads x 72, 4096 image tokens, cross-attention to 120 T5 tokens (4096-d)",
    "Flux.1-dev": "hidden 3072, 24 heads x 128, 512 text + 4096 image tokens at 1024px, MLP 12288, "
                  "single-block linear1 3072 -> 21504, linear2 15360 -> 3072",
    "Whisper-large-v3": "d_model 1280, 20 heads x 64, ffn 5120, 1500 encoder frames, vocab 51866",
    "wav2vec2-base": "hidden 768, 12 heads x 64, ffn 3072, feature projection 512 -> 768, 49 frames/s",
    "HuBERT-large": "hidden 1024, 16 heads x 64, ffn 4096, 49 frames/s",
    "ConvNeXt-T": "channels-last pointwise Linear 96 -> 384 at 56x56, 768 -> 3072 at 7x7, head 768 -> 1000",
    "EfficientNet-B0/B4": "classifier 1280 -> 1000 (B0), 1792 -> 1000 (B4)",
    "Swin-B": "embed 128, window 7x7 (49 tokens), heads 4/8/16/32 x 32, MLP 4x",
    "SAM ViT-H": "1024px image, 64x64 = 4096 tokens, embed 1280, 16 heads x 80, 14x14 windows (25 per image "
                 "after padding to 70), MLP 5120",
    "DINOv2 ViT-B/14": "embed 768, 12 heads x 64, 257 tokens at 224px, MLP 3072",
    "SigLIP ViT-B/16": "embed 768, 12 heads x 64, 196 tokens at 224px (no [CLS]), MLP 3072; text 64 tokens",
    "DETR-ResNet-50": "d_model 256, 8 heads x 32, ffn 2048, 100 queries, 950 encoder tokens (800x1216 / 32), "
                      "class head 256 -> 92",
    "MLP-Mixer-B/16": "196 tokens, 768 channels, token MLP 384, channel MLP 3072",
    "DCN-v2 (Criteo)": "13 dense + 26 x 16 embedding = 429 features, cross layers 429 x 429, deep 1024-1024-512",
    "DLRM-DCNv2 (MLPerf)": "26 x 128 embeddings + 128 = 3456, low-rank cross 3456 -> 512 -> 3456, top MLP "
                           "3456-1024-1024-512-256",
    "Two-tower retrieval": "user/item towers 512-256-128, in-batch and candidate scoring dot products of 128-d",
    "T5-base": "d_model 768, d_ff 3072, 12 heads x 64, no biases, vocab 32128",
    "BART-large": "d_model 1024, ffn 4096, 16 heads x 64, linears with bias, vocab 50265",
    "RoBERTa-large": "hidden 1024, 16 heads x 64, MLM head 1024 -> 50265",
    "ModernBERT-base": "hidden 768, GeGLU Wi 768 -> 2304, Wo 1152 -> 768, 12 heads x 64, vocab 50368",
}


def problem(model: str, layer: str, op: str, m: int, n: int, k: int, dtype: str, layout: str = "NT",
            b: int = 1, count: int = 1, bias_shape: list[int] | None = None) -> dict:
    assert model in FAMILIES, model
    entry = {"model": model, "layer": layer, "op": op, "B": b, "M": m, "N": n, "K": k, "dtype": dtype,
             "transpose_a": layout[0] == "T", "transpose_b": layout[1] == "T", "count": count}
    if bias_shape is not None:
        entry["bias_shape"] = bias_shape
    return entry


def linear(model: str, layer: str, tokens: int, k: int, n: int, dtype: str, bias: bool = False,
           count: int = 1) -> dict:
    return problem(model, layer, "addmm" if bias else "mm", tokens, n, k, dtype, "NT", count=count)


def attention(model: str, note: str, batch_heads: int, tq: int, tk: int, head_dim: int, dtype: str,
              count: int = 1) -> list[dict]:
    return [problem(model, f"attn scores q @ k^T ({note})", "bmm", tq, tk, head_dim, dtype, "NT", batch_heads, count),
            problem(model, f"attn values p @ v ({note})", "bmm", tq, head_dim, tk, dtype, "NN", batch_heads, count)]


def decoder_llm(model: str, dtype: str, hidden: int, inter: int, heads: int, kv_heads: int, head_dim: int,
                vocab: int, layers: int, prefill: tuple[int, ...], decode: tuple[int, ...],
                qkv_bias: bool = False, lm_head_prefill: bool = True) -> list[dict]:
    """A Llama-style block (separate q/k/v/o, gated MLP) and lm_head."""
    out = []
    for phase, tokens in [("prefill", t) for t in prefill] + [("decode batch", t) for t in decode]:
        note = f"{phase} {tokens}" + (" tokens" if phase == "prefill" else "")
        out.append(linear(model, f"self_attn.q_proj ({note})", tokens, hidden, heads * head_dim, dtype, qkv_bias, layers))
        out.append(linear(model, f"self_attn.k_proj, v_proj ({note})", tokens, hidden, kv_heads * head_dim, dtype,
                          qkv_bias, 2 * layers))
        out.append(linear(model, f"self_attn.o_proj ({note})", tokens, heads * head_dim, hidden, dtype, count=layers))
        out.append(linear(model, f"mlp.gate_proj, up_proj ({note})", tokens, hidden, inter, dtype, count=2 * layers))
        out.append(linear(model, f"mlp.down_proj ({note})", tokens, inter, hidden, dtype, count=layers))
        if phase == "decode batch" or lm_head_prefill:
            out.append(linear(model, f"lm_head ({note})", tokens, hidden, vocab, dtype))
    return out


def fused_llm(model: str, dtype: str, phases: tuple[tuple[int, str], ...], layers: int, bias: bool,
              *layers_kn: tuple | None) -> list[dict]:
    """A block of (name, K, N[, per-layer count]) Linears, the last being lm_head (no bias, once), at
    each (tokens, note) phase; None entries are skipped."""
    out = []
    for tokens, note in phases:
        *block, head = layers_kn
        for name, k, n, *per_layer in filter(None, block):
            out.append(linear(model, f"{name} ({note})", tokens, k, n, dtype, bias, (per_layer or [1])[0] * layers))
        out.append(linear(model, f"{head[0]} ({note})", tokens, head[1], head[2], dtype))
    return out


def llms() -> list[dict]:
    out = []
    out += decoder_llm("Qwen2.5-7B", BF16, 3584, 18944, 28, 4, 128, 152064, 28, (333,), (16,), qkv_bias=True)
    out += attention("Qwen2.5-7B", "prefill 333 tokens", 28, 333, 333, 128, BF16, 28)
    out += attention("Qwen2.5-7B", "decode batch 4, 1777 cached tokens", 4 * 28, 1, 1777, 128, BF16, 28)
    out += decoder_llm("Qwen2.5-0.5B", BF16, 896, 4864, 14, 2, 64, 151936, 24, (1000,), (), qkv_bias=True)
    out += decoder_llm("Gemma-2-2B", BF16, 2304, 9216, 8, 4, 256, 256000, 26, (600,), (8,))
    out += attention("Gemma-2-2B", "prefill 600 tokens", 8, 600, 600, 256, BF16, 26)
    out += decoder_llm("Gemma-7B", BF16, 3072, 24576, 16, 16, 256, 256000, 28, (), (1,))
    out += decoder_llm("Llama-3.1-70B", BF16, 8192, 28672, 64, 8, 128, 128256, 80, (), (16,))
    out += [linear("Llama-3.1-70B", "lm_head (prefill 901 tokens)", 901, 8192, 128256, BF16)]
    out += decoder_llm("Llama-3.2-3B", F16, 3072, 8192, 24, 8, 128, 128256, 28, (777,), (2,))
    out += decoder_llm("Mistral-Nemo-12B", BF16, 5120, 14336, 32, 8, 128, 131072, 40, (), (1,))
    out += attention("Mistral-Nemo-12B", "decode batch 1, 3001 cached tokens", 32, 1, 3001, 128, BF16, 40)
    out += [linear("Mistral-7B-v0.3", f"lm_head ({note})", m, 4096, 32768, BF16)
            for m, note in ((1, "decode batch 1"), (24, "decode batch 24"), (1023, "prefill 1023 tokens"))]
    out += fused_llm("Phi-3-mini-4k", BF16, ((1, "decode batch 1"), (350, "prefill 350 tokens")), 32, False,
                     ("self_attn.qkv_proj", 3072, 9216), ("self_attn.o_proj", 3072, 3072),
                     ("mlp.gate_up_proj", 3072, 16384), ("mlp.down_proj", 8192, 3072), ("lm_head", 3072, 32064))
    out += attention("Phi-3-mini-4k", "prefill 350 tokens", 32, 350, 350, 96, BF16, 32)
    out += fused_llm("GPT-NeoX-20B", F16, ((3, "decode batch 3"), (257, "prefill 257 tokens")), 44, True,
                     ("attention.query_key_value", 6144, 18432), ("attention.dense", 6144, 6144),
                     ("mlp.dense_h_to_4h", 6144, 24576), ("mlp.dense_4h_to_h", 24576, 6144), ("embed_out", 6144, 50432))
    out += fused_llm("Falcon-7B", BF16, ((1, "decode batch 1"), (199, "prefill 199 tokens")), 32, False,
                     ("self_attention.query_key_value", 4544, 4672), ("self_attention.dense", 4544, 4544),
                     ("mlp.dense_h_to_4h", 4544, 18176), ("mlp.dense_4h_to_h", 18176, 4544), ("lm_head", 4544, 65024))
    out += attention("Falcon-7B", "prefill 199 tokens, one KV head repeated", 71, 199, 199, 64, BF16, 32)
    # OPT's q, k, v and out_proj share one shape: one entry, 4 per layer
    out += fused_llm("OPT-1.3B", F16, ((4 * 100, "batch 4 x 100 tokens"),), 24, True,
                     ("self_attn.q/k/v/out_proj", 2048, 2048, 4), None,
                     ("fc1", 2048, 8192), ("fc2", 8192, 2048), ("lm_head", 2048, 50272))
    out += decoder_llm("SmolLM2-360M", BF16, 960, 2560, 15, 5, 64, 49152, 32, (2 * 515,), ())
    out += attention("SmolLM2-360M", "batch 2 x 515 tokens", 2 * 15, 515, 515, 64, BF16, 32)
    m = "BLOOM-560m"
    for batch, tokens in ((1, 129), (4, 300)):
        note = f"batch {batch} x {tokens} tokens"
        out += [problem(m, f"ALiBi scores alibi.baddbmm(q, k) ({note})", "baddbmm", tokens, tokens, 64, F16, "NN",
                        batch * 16, 24, [batch * 16, 1, tokens]),
                problem(m, f"attn values p @ v ({note})", "bmm", tokens, 64, tokens, F16, "NN", batch * 16, 24),
                linear(m, f"self_attention.query_key_value ({note})", batch * tokens, 1024, 3072, F16, True, 24),
                linear(m, f"mlp.dense_h_to_4h ({note})", batch * tokens, 1024, 4096, F16, True, 24),
                linear(m, f"lm_head ({note})", batch * tokens, 1024, 250880, F16)]
    out += [linear(m, "lm_head (decode batch 2)", 2, 1024, 250880, F16)]
    m = "GPT-2 Medium"
    for batch, tokens in ((1, 1024), (8, 77)):
        note = f"reorder_and_upcast_attn, batch {batch} x {tokens} tokens"
        out += [problem(m, f"attn scores baddbmm(empty, q, k, beta=0) ({note})", "baddbmm", tokens, tokens, 64, F32,
                        "NN", batch * 16, 24, [batch * 16, tokens, tokens]),
                problem(m, f"c_attn Conv1D ({note})", "addmm", batch * tokens, 3072, 1024, F16, "NN", count=24)]
    return out


def moe() -> list[dict]:
    out = []
    m = "Mixtral-8x7B"
    for tokens, note in ((131, "prefill 512 tokens, a busy expert"),
                         (3, "decode batch 16, one expert")):
        out += [linear(m, f"block_sparse_moe.experts.w1, w3 ({tokens} tokens routed, {note})", tokens, 4096, 14336,
                       BF16, count=2 * 32),
                linear(m, f"block_sparse_moe.experts.w2 ({tokens} tokens routed, {note})", tokens, 14336, 4096, BF16,
                       count=32)]
    out += [linear(m, "block_sparse_moe.gate router (prefill 512 tokens)", 512, 4096, 8, BF16, count=32)]
    m = "DeepSeek-MoE-16B"
    for tokens, note in ((45, "prefill 512 tokens"), (1, "decode batch 1")):
        out += [linear(m, f"mlp.experts.gate_proj, up_proj ({tokens} tokens routed, {note})", tokens, 2048, 1408, BF16,
                       count=2 * 27),
                linear(m, f"mlp.experts.down_proj ({tokens} tokens routed, {note})", tokens, 1408, 2048, BF16, count=27)]
    out += [linear(m, "mlp.shared_experts gate/up (prefill 512 tokens)", 512, 2048, 2 * 1408, BF16, count=2 * 27),
            linear(m, "mlp.gate router (prefill 512 tokens)", 512, 2048, 64, BF16, count=27),
            linear(m, "lm_head (decode batch 1)", 1, 2048, 102400, BF16)]
    m = "Qwen1.5-MoE-A2.7B"
    for tokens, note in ((35, "prefill 512 tokens"), (5, "decode batch 32")):
        out += [linear(m, f"mlp.experts.gate_proj, up_proj ({tokens} tokens routed, {note})", tokens, 2048, 1408, F16,
                       count=2 * 24),
                linear(m, f"mlp.experts.down_proj ({tokens} tokens routed, {note})", tokens, 1408, 2048, F16, count=24)]
    out += [linear(m, "mlp.shared_expert gate/up (prefill 512 tokens)", 512, 2048, 5632, F16, count=2 * 24),
            linear(m, "mlp.gate router (decode batch 32)", 32, 2048, 60, F16, count=24)]
    m = "OLMoE-1B-7B"
    for cap, note in ((80, "prefill 512 tokens x top-8 / 64 experts, capacity 80"), (3, "decode batch 16, capacity 3")):
        out += [problem(m, f"batched experts up/gate bmm ({note})", "bmm", cap, 1024, 2048, BF16, "NN", 64, 2 * 16),
                problem(m, f"batched experts down bmm ({note})", "bmm", cap, 2048, 1024, BF16, "NN", 64, 16)]
    return out


def diffusion() -> list[dict]:
    out = []
    m = "Stable Diffusion XL UNet"
    for tokens, ch, heads in ((4096, 640, 10), (1024, 1280, 20)):
        note = f"{tokens} latent tokens, batch 1 with guidance"
        out += attention(m, f"self-attention, {note}", 2 * heads, tokens, tokens, 64, F16, 2)
        out += [problem(m, f"cross-attn scores q @ k^T over 77 text tokens ({note})", "bmm", tokens, 77, 64, F16,
                        "NT", 2 * heads, 2),
                problem(m, f"cross-attn values p @ v over 77 text tokens ({note})", "bmm", tokens, 64, 77, F16,
                        "NN", 2 * heads, 2),
                linear(m, f"attn2.to_k, to_v from 2048-d text ({note})", 2 * 77, 2048, ch, F16, count=4),
                linear(m, f"ff GEGLU proj ({note})", 2 * tokens, ch, 8 * ch, F16, True),
                linear(m, f"ff out ({note})", 2 * tokens, 4 * ch, ch, F16, True)]
    m = "Stable Diffusion 1.5 UNet"
    for tokens, ch in ((4096, 320), (256, 1280)):
        note = f"{tokens} latent tokens, batch 2 with guidance"
        out += [linear(m, f"attn2.to_k, to_v from 768-d CLIP text ({note})", 4 * 77, 768, ch, F16, count=2),
                linear(m, f"ff GEGLU proj ({note})", 4 * tokens, ch, 8 * ch, F16, True),
                linear(m, f"attn1.to_q/k/v ({note})", 4 * tokens, ch, ch, F16, count=3)]
    m = "DiT-XL/2"
    for batch in (16,):
        note = f"256px, batch {batch} (with guidance)"
        out += [linear(m, f"attn.qkv ({note})", batch * 256, 1152, 3456, F16, True, 28),
                linear(m, f"mlp.fc1 ({note})", batch * 256, 1152, 4608, F16, True, 28),
                linear(m, f"mlp.fc2 ({note})", batch * 256, 4608, 1152, F16, True, 28),
                linear(m, f"adaLN_modulation ({note})", batch, 1152, 6912, F16, True, 28)]
        out += attention(m, note, batch * 16, 256, 256, 72, F16, 28)
    m = "PixArt-alpha-1024"
    out += attention(m, "self-attention, 4096 image tokens, batch 2", 2 * 16, 4096, 4096, 72, F16, 28)
    out += [problem(m, "cross-attn scores q @ k^T over 120 T5 tokens (batch 2)", "bmm", 4096, 120, 72, F16, "NT", 32, 28),
            problem(m, "cross-attn values p @ v over 120 T5 tokens (batch 2)", "bmm", 4096, 72, 120, F16, "NN", 32, 28),
            linear(m, "caption_projection from 4096-d T5 (batch 2 x 120 tokens)", 240, 4096, 1152, F16, True),
            linear(m, "cross_attn k/v (batch 2 x 120 tokens)", 240, 1152, 1152, F16, True, 2 * 28),
            linear(m, "mlp.fc1 (batch 2 x 4096 tokens)", 8192, 1152, 4608, F16, True, 28)]
    m = "Flux.1-dev"
    out += [linear(m, "single_blocks.linear1 (512 text + 4096 image tokens)", 4608, 3072, 21504, BF16, True, 38),
            linear(m, "single_blocks.linear2 (512 text + 4096 image tokens)", 4608, 15360, 3072, BF16, True, 38),
            linear(m, "double_blocks.txt_mlp.0 (512 text tokens)", 512, 3072, 12288, BF16, True, 19),
            linear(m, "double_blocks.img_mod.lin (batch 1)", 1, 3072, 18432, BF16, True, 19)]
    out += attention(m, "joint attention, 4608 tokens, batch 1", 24, 4608, 4608, 128, BF16, 57)
    return out


def speech() -> list[dict]:
    out = []
    m = "Whisper-large-v3"
    out += [linear(m, "encoder self_attn.q/v/out_proj (1500 frames)", 1500, 1280, 1280, F16, True, 3 * 32),
            linear(m, "encoder fc1 (1500 frames)", 1500, 1280, 5120, F16, True, 32),
            linear(m, "encoder fc2 (1500 frames)", 1500, 5120, 1280, F16, True, 32),
            linear(m, "decoder encoder_attn.k_proj (1500 frames, computed once)", 1500, 1280, 1280, F16, count=32),
            linear(m, "proj_out (decode batch 4)", 4, 1280, 51866, F16),
            linear(m, "decoder fc1 (decode batch 4)", 4, 1280, 5120, F16, True, 32)]
    out += attention(m, "encoder, 1500 frames", 20, 1500, 1500, 64, F16, 32)
    out += [problem(m, "decoder cross-attn scores over 1500 frames (decode batch 4)", "bmm", 1, 1500, 64, F16, "NT",
                    4 * 20, 32),
            problem(m, "decoder cross-attn values over 1500 frames (decode batch 4)", "bmm", 1, 64, 1500, F16, "NN",
                    4 * 20, 32)]
    m = "wav2vec2-base"
    for batch, frames in ((1, 499), (8, 249)):
        note = f"batch {batch} x {frames} frames"
        out += [linear(m, f"feature_projection 512 -> 768 ({note})", batch * frames, 512, 768, F32, True),
                linear(m, f"attention q/k/v/out_proj ({note})", batch * frames, 768, 768, F32, True, 4 * 12),
                linear(m, f"feed_forward.intermediate_dense ({note})", batch * frames, 768, 3072, F16, True, 12)]
        out += attention(m, note, batch * 12, frames, frames, 64, F16, 12)
    m = "HuBERT-large"
    out += [linear(m, "attention q/k/v/out_proj (batch 2 x 749 frames)", 2 * 749, 1024, 1024, F16, True, 4 * 24),
            linear(m, "feed_forward.intermediate_dense (batch 2 x 749 frames)", 2 * 749, 1024, 4096, F16, True, 24),
            linear(m, "feed_forward.output_dense (batch 2 x 749 frames)", 2 * 749, 4096, 1024, F16, True, 24)]
    out += attention(m, "batch 2 x 749 frames", 2 * 16, 749, 749, 64, F16, 24)
    return out


def vision() -> list[dict]:
    out = []
    m = "ConvNeXt-T"
    for batch in (8,):
        out += [linear(m, f"stage 1 pwconv1 (batch {batch} x 56x56)", batch * 3136, 96, 384, F16, True, 3),
                linear(m, f"stage 1 pwconv2 (batch {batch} x 56x56)", batch * 3136, 384, 96, F16, True, 3),
                linear(m, f"stage 4 pwconv1 (batch {batch} x 7x7)", batch * 49, 768, 3072, F16, True, 3),
                linear(m, f"head.fc (batch {batch})", batch, 768, 1000, F16, True)]
    m = "EfficientNet-B0/B4"
    out += [linear(m, "B0 classifier (batch 64)", 64, 1280, 1000, F32, True),
            linear(m, "B4 classifier (batch 24)", 24, 1792, 1000, F16, True)]
    m = "Swin-B"
    for stage, windows, heads, dim in ((1, 64, 4, 128), (3, 4, 16, 512)):
        out += attention(m, f"stage {stage}, batch 8 x {windows} windows", 8 * windows * heads, 49, 49, 32, F16, 2)
        out += [linear(m, f"stage {stage} attn.qkv (batch 8)", 8 * windows * 49, dim, 3 * dim, F16, True, 2),
                linear(m, f"stage {stage} mlp.fc1 (batch 8)", 8 * windows * 49, dim, 4 * dim, F16, True, 2)]
    m = "SAM ViT-H"
    out += attention(m, "windowed 14x14, 25 windows", 25 * 16, 196, 196, 80, BF16, 28)
    out += attention(m, "global, 4096 tokens", 16, 4096, 4096, 80, BF16, 4)
    out += [linear(m, "attn.qkv (4096 tokens, padded windows 4900)", 4900, 1280, 3840, BF16, True, 28),
            linear(m, "mlp.lin1 (4096 tokens)", 4096, 1280, 5120, BF16, True, 32),
            linear(m, "mlp.lin2 (4096 tokens)", 4096, 5120, 1280, BF16, True, 32)]
    m = "DINOv2 ViT-B/14"
    for batch in (1, 4):
        out += attention(m, f"batch {batch}, 257 tokens", batch * 12, 257, 257, 64, F16, 12)
        out += [linear(m, f"attn.qkv (batch {batch} x 257 tokens)", batch * 257, 768, 2304, F16, True, 12),
                linear(m, f"mlp.fc2 (batch {batch} x 257 tokens)", batch * 257, 3072, 768, F16, True, 12)]
    m = "SigLIP ViT-B/16"
    out += attention(m, "image, batch 16, 196 tokens", 16 * 12, 196, 196, 64, BF16, 12)
    out += [linear(m, "vision mlp.fc1 (batch 16 x 196 tokens)", 16 * 196, 768, 3072, BF16, True, 12),
            linear(m, "text q/k/v/out_proj (batch 16 x 64 tokens)", 16 * 64, 768, 768, BF16, True, 4 * 12),
            linear(m, "text mlp.fc2 (batch 16 x 64 tokens)", 16 * 64, 3072, 768, BF16, True, 12)]
    m = "DETR-ResNet-50"
    out += attention(m, "encoder, batch 2, 950 tokens", 2 * 8, 950, 950, 32, F32, 6)
    out += attention(m, "decoder cross-attention, batch 2, 100 queries over 950 tokens", 2 * 8, 100, 950, 32, F32, 6)
    out += [linear(m, "encoder linear1 (batch 2 x 950 tokens)", 2 * 950, 256, 2048, F32, True, 6),
            linear(m, "class_labels_classifier (batch 2 x 100 queries)", 200, 256, 92, F32, True)]
    m = "MLP-Mixer-B/16"
    out += [problem(m, "token-mixing mlp fc1 on the transposed activation (batch 1)", "mm", 768, 384, 196, F16, "TT",
                    count=12),
            problem(m, "token-mixing mlp fc2 on the transposed activation (batch 1)", "mm", 768, 196, 384, F16, "TT",
                    count=12),
            linear(m, "channel-mixing mlp fc1 (batch 32 x 196 tokens)", 32 * 196, 768, 3072, F16, True, 12)]
    return out


def recommendation() -> list[dict]:
    out = []
    m = "DCN-v2 (Criteo)"
    for batch in (4096, 1000):
        out += [linear(m, f"cross layer W x0 (batch {batch})", batch, 429, 429, F32, True, 3),
                linear(m, f"deep mlp 429 -> 1024 (batch {batch})", batch, 429, 1024, F32, True),
                linear(m, f"deep mlp 1024 -> 512 (batch {batch})", batch, 1024, 512, F16, True)]
    m = "DLRM-DCNv2 (MLPerf)"
    for batch in (16384, 2048):
        out += [linear(m, f"interaction low-rank V 3456 -> 512 (batch {batch})", batch, 3456, 512, BF16, True, 3),
                linear(m, f"interaction low-rank U 512 -> 3456 (batch {batch})", batch, 512, 3456, BF16, True, 3),
                linear(m, f"top mlp 3456 -> 1024 (batch {batch})", batch, 3456, 1024, BF16, True)]
    out += [linear(m, "top mlp 512 -> 256 (batch 16384)", 16384, 512, 256, F32, True)]
    m = "Two-tower retrieval"
    out += [problem(m, "in-batch scores user @ item^T (batch 4096, 128-d)", "mm", 4096, 4096, 128, F32, "NT"),
            problem(m, "candidate scoring user @ items^T (batch 64 over 100003 items, 128-d)", "mm", 64, 100003, 128, F16,
                    "NT"),
            problem(m, "per-request scores bmm (512 users x 1000 candidates, 128-d)", "bmm", 1, 1000, 128, F16, "NT", 512),
            linear(m, "user tower 512 -> 256 (batch 4096)", 4096, 512, 256, F32, True),
            linear(m, "item tower 256 -> 128 (batch 4096)", 4096, 256, 128, F16, True)]
    return out


def encoders() -> list[dict]:
    out = []
    m = "T5-base"
    out += [linear(m, "encoder SelfAttention.q/k/v/o (batch 4 x 512 tokens)", 2048, 768, 768, BF16, count=4 * 12),
            linear(m, "encoder DenseReluDense.wi (batch 4 x 512 tokens)", 2048, 768, 3072, BF16, count=12),
            linear(m, "lm_head (decode batch 4)", 4, 768, 32128, BF16),
            linear(m, "lm_head (batch 4 x 61 target tokens)", 244, 768, 32128, BF16)]
    out += attention(m, "encoder, batch 4 x 512 tokens", 4 * 12, 512, 512, 64, BF16, 12)
    m = "BART-large"
    out += [linear(m, "self_attn.q/k/v/out_proj (batch 2 x 143 tokens)", 286, 1024, 1024, F16, True, 4 * 24),
            linear(m, "fc1 (batch 2 x 143 tokens)", 286, 1024, 4096, F16, True, 24),
            linear(m, "lm_head (decode batch 2)", 2, 1024, 50265, F16),
            linear(m, "lm_head (batch 2 x 143 tokens)", 286, 1024, 50265, F16)]
    out += attention(m, "batch 2 x 143 tokens", 2 * 16, 143, 143, 64, F16, 24)
    m = "RoBERTa-large"
    out += [linear(m, "lm_head.decoder (batch 8 x 160 tokens)", 1280, 1024, 50265, F16, True),
            linear(m, "lm_head.dense (batch 8 x 160 tokens)", 1280, 1024, 1024, F16, True)]
    m = "ModernBERT-base"
    out += [linear(m, "attn.Wqkv, mlp.Wi GeGLU (batch 8 x 511 tokens)", 8 * 511, 768, 2304, BF16, count=2 * 22),
            linear(m, "mlp.Wo (batch 8 x 511 tokens)", 8 * 511, 1152, 768, BF16, count=22)]
    out += attention(m, "batch 8 x 511 tokens", 8 * 12, 511, 511, 64, BF16, 22)
    out += [linear(m, "decoder (batch 8 x 511 tokens)", 8 * 511, 768, 50368, BF16, True)]
    return out


def training_backward() -> list[dict]:
    """grad_weight = grad_out^T @ x of a Linear's backward (TN): fine-tuning runs these."""
    out = []
    for model, layer, tokens, k, n, dtype in (
            ("Llama-3.2-3B", "mlp.down_proj grad_weight (fine-tuning batch 4 x 777 tokens)", 4 * 777, 8192, 3072, BF16),
            ("Qwen2.5-0.5B", "self_attn.q_proj grad_weight (fine-tuning batch 8 x 1000 tokens)", 8000, 896, 896, BF16),
            ("DINOv2 ViT-B/14", "mlp.fc2 grad_weight (fine-tuning batch 32 x 257 tokens)", 32 * 257, 3072, 768, F16),
            ("DCN-v2 (Criteo)", "cross layer grad_weight (batch 4096)", 4096, 429, 429, F32),
            ("T5-base", "DenseReluDense.wo grad_weight (batch 4 x 512 tokens)", 2048, 3072, 768, F32)):
        # out[N_w, K_w] = grad_out^T [N_w, tokens] @ x [tokens, K_w]: M = out features, K = tokens
        out.append(problem(model, layer, "mm", n, k, tokens, dtype, "TN"))
    return out


def problem_key(e: dict) -> tuple:
    dtype = e.get("dtype")
    return (e["op"], e.get("B", 1), e["M"], e["N"], e["K"], e.get("dtype_a", dtype), e.get("dtype_b", dtype),
            e.get("dtype_out", dtype), bool(e.get("transpose_a")), bool(e.get("transpose_b")))


def elsewhere() -> set[tuple]:
    """The problems of the other shipped shapesets and of benchmarks/e2e_shapes.json."""
    keys = set()
    for path in sorted(SHAPESETS.glob("*.json")):
        if path != OUT:
            keys |= {problem_key(e) for e in json.loads(path.read_text())["entries"]}
    keys |= {problem_key(e) for e in json.loads((ROOT / "benchmarks" / "e2e_shapes.json").read_text())}
    return keys


def entries() -> list[dict]:
    out = llms() + moe() + diffusion() + speech() + vision() + recommendation() + encoders() + training_backward()
    taken = elsewhere()
    kept = []
    for e in out:
        gflop = 2 * e["B"] * e["M"] * e["N"] * e["K"] / 1e9
        assert gflop <= MAX_GFLOP, (e["model"], e["layer"], gflop)
        if problem_key(e) in taken:
            print(f"left out (held elsewhere): {e['model']} {e['layer']}")
            continue
        kept.append(e)
    return kept


def main() -> None:
    items = entries()
    families = sorted({e["model"] for e in items})
    description = (
        "Held-out GEMMs of public models, never trained on: `diode train` refuses a dataset holding one of "
        "these problems and the collectors never draw one. Generated by data/h100/make_realmodels_shapeset.py "
        "(its docstring gives the modelling rules: nn.Linear NT, attention bmm B = batch x heads, ALiBi and "
        "upcast baddbmm, MoE experts, training grad_weight TN, MLP-Mixer token mixing TT). Sizes per family: "
        + "; ".join(f"{f}: {FAMILIES[f]}" for f in families) + ".")
    data = {"name": NAME, "description": description, "entries": items}
    OUT.write_text(json.dumps({k: v for k, v in data.items() if k != "entries"}, indent=1)[:-2]
                   + ',\n "entries": [\n' + ",\n".join("  " + json.dumps(e) for e in items) + "\n ]\n}\n")
    unique = {problem_key(e) for e in items}
    print(f"{OUT}: {len(items)} entries, {len(unique)} distinct problems, {len(families)} model families")


if __name__ == "__main__":
    main()
