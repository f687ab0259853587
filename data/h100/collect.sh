#!/usr/bin/env bash
# How data/h100/ was collected (on the lent H100, fast mode): bash data/h100/collect.sh [PART...]
# Parts: train-mm train-bmm val-mm val-bmm train-f32 val-f32 train-odd train-decode val-odd train-attn train-f32s train-odd2 train-f32m odd-v1
# (default: all but odd-v1, in that order). Files go to $DATA (default data/h100); every command
# resumes where a killed run stopped. Run it from the repository root.
set -euo pipefail
DATA=${DATA:-data/h100}
DIODE=${DIODE:-"python3 -m torch_diode.cli"}
# Half precision: every layout/op/size class. fp32 (no TF32): mm/addmm of nn.Linear's layout, sizes
# >= 256, at most 20 GFLOP, because its kernels compile ~20x slower (~2 per second on 14 workers).
COMMON="--search-mode fast --exhaustive-sample 320 --reps 6 --chunk-size 50 --workers 14"
HALF="--dtypes float16 bfloat16 --layouts NN NT --max-gflop 200"
MM="$HALF --ops mm addmm --sizes 64 128 256 512 768 1024 1536 2048 2304 3072 4096 5120 8192 11008 14336 --m-sizes 16 32 64 128 256 512 1024 2048 4096 8192"
BMM="$HALF --ops bmm --max-batch 32 --sizes 64 128 256 512 1024 2048 4096 --m-sizes 128 256 512 1024 2048 4096"
F32_SIZES="--sizes 256 512 768 1024 1536 2048 2304 3072 4096 5120 8192 11008 14336"
F32="--dtypes float32 --layouts NT --max-gflop 20 --ops mm addmm $F32_SIZES --m-sizes 256 512 1024 2048 4096 8192"
# fp32 at small M (a classifier head or a small batch: M of 1-128 rows), the same widths.
F32M="--dtypes float32 --layouts NT --max-gflop 20 --ops mm addmm $F32_SIZES --m-sizes 1 2 4 8 16 32 64 128"
# Sizes that are not multiples of 8 (K=479, 197 tokens, 1000 classes...): cuBLAS and the Triton
# templates slow down on leading dimensions that are not 16-byte aligned; log-normal sizes are
# mostly such. Half precision, mm/addmm/bmm (batch up to 512: 32 images x 12 heads), three layouts,
# sizes from 1. They share few kernel specialisations (~5 compiles/s against ~17 for aligned
# sizes), so each problem gets 48 sampled EXHAUSTIVE configs instead of 320.
ODD="--dtypes float16 bfloat16 --layouts NN NT TN --max-gflop 100 --ops mm addmm bmm --max-batch 512 --log-normal --log-normal-mean 6.5 --log-normal-sigma 1.2 --min-size 1 --max-size 8192"
ODD_SAMPLE="--search-mode fast --exhaustive-sample 48 --reps 6 --chunk-size 50 --workers 14"
# Decode: M of 1-8 rows (tokens of a decode step, per sequence for attention's bmm) against the
# aligned widths of MM.
DECODE="--dtypes float16 bfloat16 --layouts NN NT --max-gflop 100 --ops mm addmm bmm --max-batch 512 --m-sizes 1 2 4 8 --sizes 64 128 256 512 768 1024 2048 4096 5120 8192 11008 14336"
DECODE_SAMPLE="--search-mode fast --exhaustive-sample 64 --reps 6 --chunk-size 50 --workers 14"
# Attention with odd token counts (ViT/CLIP/DINOv2 [CLS] tokens, CLIP text, Whisper, Swin windows,
# SD cross-attention, decode over odd KV lengths): the shipped shapeset attention_odd_tokens, made by
# data/h100/make_attention_shapeset.py without any (M, N, K) of benchmarks/e2e.py.
# train-odd2: 300 more of train-odd's design (another seed), none of train-odd's problems.
# fp32 with 48 sampled configs: train-f32 (320 sampled) stopped at 47 problems, as each of its
# problems compiles ~5 minutes of new kernels; a fixed sample of 48 compiles once.
HELD_OUT="data/h100/validation data/h100/odd"
# data/h100/odd (an earlier unaligned design, 320 sampled configs): its first 10 problems.
ODD_V1="--dtypes float16 bfloat16 --layouts NN NT TN --max-gflop 100 --ops mm addmm bmm --max-batch 32 --log-normal --log-normal-mean 6.9 --log-normal-sigma 1.0 --min-size 16 --max-size 8192"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(train-mm train-bmm val-mm val-bmm train-f32 val-f32 train-odd train-decode val-odd train-attn train-f32s train-odd2 train-f32m)
for part in "${parts[@]}"; do
  echo "[$(date +%T)] $part"
  case $part in
    train-mm)  $DIODE collect $COMMON $MM --num-shapes 300 --seed 1 -o "$DATA/train/h100_mm.msgpack.gz" ;;
    train-bmm) $DIODE collect $COMMON $BMM --num-shapes 90 --seed 2 -o "$DATA/train/h100_bmm.msgpack.gz" ;;
    train-f32) $DIODE collect $COMMON $F32 --num-shapes 140 --seed 3 -o "$DATA/train/h100_f32.msgpack.gz" ;;
    val-mm)    $DIODE create-validation --train-dataset "$DATA/train" $COMMON $MM --num-shapes 80 --seed 101 -o "$DATA/validation/h100_mm.msgpack.gz" ;;
    val-bmm)   $DIODE create-validation --train-dataset "$DATA/train" $COMMON $BMM --num-shapes 25 --seed 102 -o "$DATA/validation/h100_bmm.msgpack.gz" ;;
    val-f32)   $DIODE create-validation --train-dataset "$DATA/train" $COMMON $F32 --num-shapes 15 --seed 103 -o "$DATA/validation/h100_f32.msgpack.gz" ;;
    train-odd) $DIODE collect $ODD_SAMPLE $ODD --num-shapes 150 --seed 5 -o "$DATA/train/h100_odd.msgpack.gz" ;;
    train-decode) $DIODE collect $DECODE_SAMPLE $DECODE --num-shapes 80 --seed 6 -o "$DATA/train/h100_decode.msgpack.gz" ;;
    val-odd)   $DIODE create-validation --train-dataset "$DATA/train" $ODD_SAMPLE $ODD --num-shapes 25 --seed 105 -o "$DATA/validation/h100_odd.msgpack.gz" ;;
    train-attn) $DIODE collect-shapeset --shapeset attention_odd_tokens $ODD_SAMPLE --exclude $HELD_OUT -o "$DATA/train/h100_attn.msgpack.gz" ;;
    train-f32s) $DIODE collect $ODD_SAMPLE $F32 --num-shapes 60 --seed 7 --exclude $HELD_OUT data/h100/train/h100_f32_chunk0000.msgpack.gz -o "$DATA/train/h100_f32s.msgpack.gz" ;;
    train-odd2) $DIODE collect $ODD_SAMPLE $ODD --num-shapes 300 --seed 8 --exclude $HELD_OUT data/h100/train/h100_odd_chunk000{0,1,2}.msgpack.gz -o "$DATA/train/h100_odd2.msgpack.gz" ;;
    train-f32m) $DIODE collect $ODD_SAMPLE $F32M --num-shapes 60 --seed 9 --exclude $HELD_OUT -o "$DATA/train/h100_f32m.msgpack.gz" ;;
    odd-v1)    $DIODE collect $COMMON $ODD_V1 --num-shapes 80 --seed 4 -o "$DATA/odd/h100_odd.msgpack.gz" ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
