#!/usr/bin/env bash
# How data/h100/ was collected (on the lent H100, fast mode): bash data/h100/collect.sh [PART...]
# Parts: realmodels (the held-out real models' GEMMs, never trained on: benchmarks.selection_replay realmodels judges on them);
# v2-layouts v2-hugek v2-vocab v2-skinnyk v2-batch v2-attn-qk v2-attn-pv v2-odd v2-odd1 v2-f32 v2-tf32 v2-f32-odd v2-tf32-odd
# v2-f32-hugek v2-tf32-hugek v2-f32-vocab v2-tf32-vocab v2-f32-batch v2-tf32-batch v2-decomposek v2-hidden (coverage design);
# v2-f32-attn-qk v2-f32-attn-pv v2-tf32-attn-qk v2-tf32-attn-pv (fp32 attention at aligned token counts);
# v2-f32-attn-qk-odd v2-f32-attn-pv-odd v2-tf32-attn-qk-odd v2-tf32-attn-pv-odd (fp32 attention at any token count, models' layouts);
# v2-fill-baddbmm v2-fill-bmm-tt v2-f32-bmm v2-tf32-bmm v2-f32-mm v2-tf32-mm (the cells left short); v2-tma;
# v2-attn-qk4 v2-attn-pv4 (attention at token counts that are multiples of 4); v2-attn-qk4b v2-attn-pv4b v2-odd1b (more of
# those designs and v2-odd1's, another seed, drawn per problem); v2-attn-pv-nn v2-attn-qk-nt (attention laid out as
# models lay it out, drawn per problem); v2-attn-decode-qk v2-attn-decode-pv (decode attention: one query row over
# KV caches of any length); v2-attn-decode-pv-long (decode p @ v over KV caches of 1,000-16,384
# tokens);
# fill-f32 fill-tf32 (only the fp32 cells a coverage snapshot lists as short);
# sample-h200-100 (the 100 problems `diode sample` drew from the H200's data for a new GPU, data/h100/sample_h200_100.json);
# val-v2-layouts val-v2-hidden val-v2-odd val-v2-odd1 val-v2-attn-qk val-v2-attn-pv val-v2-vocab val-v2-hugek val-v2-tma val-v2-attn4 (their validation);
# inductor-decomposek inductor-tma inductor-misaligned (stock max-autotune's own timings, to $DATA/inductor_timed);
# remeasure-hinted (the problems whose kernels now get layout hints, measured again and merged in place);
# remeasure-lead (the problems under LEAD_BELOW_US=30 us of the files timed without the collector's lead before each
# flush, measured again and merged in place);
# train-mm train-bmm val-mm val-bmm train-f32 val-f32 train-odd train-decode val-odd train-attn train-f32s train-odd2 train-f32m odd-v1
# (default: all but odd-v1, in that order). Files go to $DATA (default data/h100); every command
# resumes where a killed run stopped. GPUS=n runs the parts on n GPUs at once (below). Run it from
# the repository root.
set -euo pipefail
DATA=${DATA:-data/h100}
# File names start with the GPU's name, the last part of $DATA (h100, h200).
GPU=$(basename "$DATA")
# $DATA named after a GPU (h100, h200) holds that GPU's measurements: on a machine whose GPU is
# another (nvidia-smi names it), the script stops before it measures (a lent machine of one kind
# may come with another's cards)
if [[ $GPU =~ ^[a-z]+[0-9]+$ ]] && command -v nvidia-smi > /dev/null; then
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
  case ${card^^} in
    *"${GPU^^}"*) ;;
    *) echo "collect.sh: $DATA holds ${GPU^^} measurements, but this machine's GPU is '$card'" >&2; exit 2 ;;
  esac
fi
PYTHON=${PYTHON:-python3}  # the interpreter with torch_diode installed
DIODE=${DIODE:-"$PYTHON -m torch_diode.cli"}
# diode without the import-time registration of a shipped model (CUDA, the model file, Inductor):
# for the commands that measure nothing
DIODE_UNREGISTERED="env TORCH_DIODE_NO_AUTOREGISTER=1 $DIODE"
# A CUDA fault (a misaligned address, say) ends the process; the collector marks the problem in
# flight and skips one that ended two runs. So a part that exits otherwise than 0 (done), 2 (bad
# input), 124 (timeout) or 130 (Ctrl-C) is run again, up to RETRIES more times, and resumes.
RETRIES=${RETRIES:-4}
run_diode() {
  local attempt=0 rc=0
  while true; do
    $DIODE "$@" && return 0 || rc=$?
    case $rc in 2|124|130) return $rc ;; esac
    [ $attempt -lt "$RETRIES" ] || return $rc
    attempt=$((attempt + 1))
    echo "[$(date +%T)] exit $rc: running the part again ($attempt of $RETRIES)" >&2
  done
}
# Half precision: every layout/op/size class. fp32 (no TF32): mm/addmm of nn.Linear's layout, sizes
# >= 256, at most 20 GFLOP, because its kernels compile far slower (data/logs/collection_h100.log).
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
# sizes from 1. They share few kernel specialisations (each problem compiles its own kernels),
# so each problem gets 48 sampled EXHAUSTIVE configs instead of 320.
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
# problems compiles minutes of new kernels; a fixed sample of 48 compiles once.
HELD_OUT="data/h100/validation data/h100/odd"
# data/h100/odd (an earlier unaligned design, 320 sampled configs): its first 10 problems.
ODD_V1="--dtypes float16 bfloat16 --layouts NN NT TN --max-gflop 100 --ops mm addmm bmm --max-batch 32 --log-normal --log-normal-mean 6.9 --log-normal-sigma 1.0 --min-size 16 --max-size 8192"
# Coverage design (v2 parts): every op (mm addmm bmm baddbmm) in every layout (NN NT TN TT), and the
# size regimes that public models run and the first design lacked: K up to 131072 (long reductions),
# vocabulary-sized N up to 262144 (lm_head), skinny K, batches of 64-2048, attention bmm over odd
# token counts with head dims 32-256, fp32 with and without TF32. ATen + DEFAULT + 150 sampled
# EXHAUSTIVE configs per half-precision problem, 48 for the unaligned and fp32 parts (see
# benchmarks/studies/README.md, sample_budget.py, for the measurement behind the sample sizes). ${N:-...} caps a part's problems
# for one call; a later call with a larger N extends the same draw.
V2_TIMING="--reps 6 --chunk-size 50 --workers 14"
ALIGNED="--search-mode fast --exhaustive-sample 150 $V2_TIMING"
SAMPLED="--search-mode fast --exhaustive-sample 48 $V2_TIMING"
V2_ALIGNED="$ALIGNED --exclude $HELD_OUT"
V2_SAMPLED="$SAMPLED --exclude $HELD_OUT"
# The parts below that take $PER_PROBLEM draw each problem's 48 configs apart instead of one draw
# for the part: odd sizes and attention specialise their kernels per problem anyway, so the part's
# problems time nearly all of the EXHAUSTIVE list between them for 4-12% more kernels to compile
# (python -m benchmarks.studies.sample_rotation; benchmarks/studies/README.md). The H200's files
# of those parts were collected with one draw before the option existed (each file records it);
# v2-attn-qk4b, v2-attn-pv4b and v2-odd1b are more problems of the same designs (seeds of their own),
# each drawn per problem, so that a GPU with those files still gets per-problem draws.
PER_PROBLEM="--exhaustive-rotations 0"
V2_HALF="--dtypes float16 bfloat16 --layouts NN NT TN TT"
V2_SIZES="--sizes 64 128 256 512 768 1024 1536 2048 2560 3072 4096 5120 6144 8192 11008 14336"
V2_M="--m-sizes 1 2 4 8 16 32 64 128 256 512 1024 2048 4096 8192"
V2_LAYOUTS="$V2_HALF --ops mm addmm bmm baddbmm --max-batch 128 --max-gflop 200 $V2_SIZES $V2_M"
V2_HUGEK="$V2_HALF --ops mm addmm bmm baddbmm --max-batch 16 --max-gflop 300 --m-sizes 1 4 16 32 64 128 256 512 1024 2048 --n-sizes 16 32 64 128 256 512 1024 2048 4096 --k-sizes 16384 20480 24576 32768 49152 65536 98304 131072"
V2_VOCAB="$V2_HALF --ops mm addmm --max-gflop 600 --m-sizes 1 2 4 8 16 32 64 128 256 512 1024 2048 4096 --n-sizes 32000 32064 32768 49152 50257 50304 65536 100352 128256 151936 152064 163840 256000 262144 --k-sizes 512 768 1024 1536 2048 2560 3072 4096 5120 8192"
V2_SKINNYK="$V2_HALF --ops mm addmm bmm baddbmm --max-batch 64 --max-gflop 100 $V2_SIZES $V2_M --k-sizes 1 2 4 8 16 24 32 40 48 64"
V2_BATCH="$V2_HALF --ops bmm baddbmm --min-batch 64 --max-batch 2048 --max-gflop 200 --sizes 16 32 64 128 256 512 1024 2048 --m-sizes 1 4 16 64 128 256 512 1024"
V2_ATTN_QK="$V2_HALF --ops bmm baddbmm --min-batch 8 --max-batch 512 --max-gflop 200 --log-normal --log-normal-mean 5.8 --log-normal-sigma 1.1 --min-size 1 --max-size 8192 --k-sizes 32 40 64 72 80 96 128 160 256"
V2_ATTN_PV="$V2_HALF --ops bmm baddbmm --min-batch 8 --max-batch 512 --max-gflop 200 --log-normal --log-normal-mean 5.8 --log-normal-sigma 1.1 --min-size 1 --max-size 8192 --n-sizes 32 40 64 72 80 96 128 160 256"
# token counts that are multiples of 4 (ViT's 196, Whisper's 1500, 300): rows 8-byte aligned, where
# cuBLAS and Triton compare otherwise than at the odd counts the log-normal draw mostly gives
V2_ATTN4="--alignment 4 --aligned-fraction 1"
# attention as models lay it out: p @ v with both operands row-major (NN), q @ k^T with k's transpose
# as a view (NT). The designs above spread their problems over the four layouts, so few of them are
# these two; half of the token counts here are multiples of 4
# (Whisper's 1500, ViT's 196), the rest any count (77, 257)
V2_ATTN_MODEL="--alignment 4 --aligned-fraction 0.5"
# decode attention: one query row per sequence and head (M of 1; 2-8 where grouped-query heads share
# a KV head), over KV caches of any length (Mistral-Nemo's 3001, Whisper's 1500 frames), q @ k^T NT
# and p @ v NN; the attention designs above draw M from the token counts, so few of their problems
# have one row
V2_ATTN_DECODE="--dtypes float16 bfloat16 --ops bmm baddbmm --min-batch 8 --max-batch 512 --max-gflop 50 --m-sizes 1 1 1 2 4 8 --log-normal --log-normal-mean 7.0 --log-normal-sigma 1.0 --min-size 16 --max-size 16384 $V2_ATTN_MODEL"
# decode p @ v over long KV caches: the draw above centres on about 1,100 tokens, so few of its
# problems hold the 1,000-16,384 tokens of a long conversation, where cuBLAS and the Triton configs
# trade places with the KV length and the head dim; KV lengths of any count, a quarter of them
# multiples of 8. Into $DATA/decode_pv_long/, which no recipe trains on: trained on, the part makes
# the H100 model's held-out pick for such a GEMM slower (data/README.md)
V2_ATTN_DECODE_LONG="--dtypes float16 bfloat16 --ops bmm baddbmm --layouts NN --min-batch 8 --max-batch 512 --max-gflop 50 --m-sizes 1 1 1 2 4 8 --n-sizes 64 80 96 128 256 --log-normal --log-normal-mean 8.0 --log-normal-sigma 0.6 --min-size 1000 --max-size 16384 --alignment 8 --aligned-fraction 0.25"
V2_ODD="$V2_HALF --ops mm addmm bmm baddbmm --max-batch 512 --max-gflop 100 --log-normal --log-normal-mean 6.5 --log-normal-sigma 1.3 --min-size 1 --max-size 16384"
# One odd size among M, N and K or two, the rest multiples of 8: one or two operands misaligned, as
# public models' misaligned GEMMs mostly are (an odd token count, MLP-Mixer's K of 196), where
# v2-odd's log-normal sizes mostly misalign all three (benchmarks/results/misaligned_groups_h100_cpu.json:
# 48 of the held-out real models' 55 misaligned problems have one operand misaligned; 74 of the
# H100 validation set's 180 have all three)
V2_ODD1="${V2_ODD/--min-size 1 /--min-size 16 } --alignment 8 --aligned-fraction 0.5"  # v2-odd's draw, sizes from 16
V2_F32_SIZES="--max-gflop 20 --sizes 64 128 256 512 768 1024 1536 2048 3072 4096 5120 8192 --m-sizes 1 2 8 16 32 64 128 256 512 1024 2048 4096"
V2_F32="--dtypes float32 --layouts NN NT TN TT --ops mm addmm bmm baddbmm --max-batch 32 $V2_F32_SIZES"
V2_F32_ODD="--dtypes float32 --layouts NN NT TN TT --ops mm addmm bmm baddbmm --max-batch 64 --max-gflop 20 --log-normal --log-normal-mean 6.3 --log-normal-sigma 1.3 --min-size 1 --max-size 16384"
# fp32 in the long-K, vocabulary-N and large-batch regimes, with and without TF32 (v2-f32 draws none
# of them: its sizes stop at 8192 and its batches at 32).
F32_ALL="--dtypes float32 --layouts NN NT TN TT"
V2_F32_HUGEK="$F32_ALL --ops mm addmm bmm baddbmm --max-batch 8 --max-gflop 40 --m-sizes 1 4 16 32 64 128 256 512 1024 --n-sizes 16 32 64 128 256 512 1024 2048 --k-sizes 16384 24576 32768 65536 131072"
V2_F32_VOCAB="$F32_ALL --ops mm addmm --max-gflop 60 --m-sizes 1 2 4 8 16 32 64 128 256 512 --n-sizes 32000 32768 50257 65536 128256 151936 --k-sizes 512 768 1024 2048 4096"
V2_F32_BATCH="$F32_ALL --ops bmm baddbmm --min-batch 64 --max-batch 2048 --max-gflop 40 --sizes 16 32 64 128 256 512 1024 --m-sizes 1 4 16 64 128 256 512 1024"
# fp32 attention at aligned token counts (an fp32 model's q @ k^T and p @ v: GPT-2, BERT, ViT at
# 1024 tokens and 12-16 heads): the fp32 parts above hold few bmm/baddbmm with a head dim as K (or
# N) and token counts as the other two.
V2_F32_TOKENS="128 256 384 512 768 1024 1536 2048 4096"
V2_F32_ATTN="--dtypes float32 --layouts NN NT --ops bmm baddbmm --min-batch 8 --max-batch 128 --max-gflop 40 --m-sizes $V2_F32_TOKENS"
V2_F32_ATTN_QK="$V2_F32_ATTN --n-sizes $V2_F32_TOKENS --k-sizes 32 64 80 96 128"
V2_F32_ATTN_PV="$V2_F32_ATTN --n-sizes 32 64 80 96 128 --k-sizes $V2_F32_TOKENS"
# fp32 attention at any token count (GPT-2's 77 text tokens, DETR's 950, wav2vec2's 499), laid out as
# models lay it out (q @ k^T NT, or NN where the model copies k^T as GPT-2's baddbmm does; p @ v NN),
# half of the token counts multiples of 4: the aligned counts above leave the fp32 first picks on
# such problems to the seeds of the training
V2_F32_ATTN_ODD="--dtypes float32 --ops bmm baddbmm --min-batch 8 --max-batch 256 --max-gflop 20 --log-normal --log-normal-mean 5.8 --log-normal-sigma 1.1 --min-size 16 --max-size 4096 $V2_ATTN_MODEL"
V2_F32_ATTN_QK_ODD="$V2_F32_ATTN_ODD --layouts NN NT --k-sizes 32 64 80 96 128"
V2_F32_ATTN_PV_ODD="$V2_F32_ATTN_ODD --layouts NN --n-sizes 32 64 80 96 128"
# Public models' hidden and intermediate sizes (Qwen2.5's 896/3584/18944, Llama's 11008/14336, ...):
# cuBLAS's speed on a size depends on its factors (the H200's Qwen2.5-7B decode
# addmms), and V2_SIZES holds few of them.
V2_HIDDEN="$V2_HALF --ops mm addmm --max-gflop 200 --sizes 576 896 960 1152 1536 1792 2560 3584 4608 5632 6912 7168 8960 9216 12288 13824 18944 --m-sizes 1 2 4 8 16 32 64 128 256 512 1024 2048 4096"
# decompose_k (mm with K >= 32 x M and K >= 32 x N: one candidate per split of K): the fast
# collector times every split Inductor offers (v2-decomposek). The persistent TMA template (offered
# only with ENABLE_PERSISTENT_TMA_MATMUL=1): with that flag set the fast collector also times its
# DEFAULT list where Inductor offers it (v2-tma, val-v2-tma). inductor-tma records every choice
# Inductor benchmarks in stock max-autotune (DEFAULT list), timed by Inductor's benchmark, whose
# ATen and decompose_k times carry the host's launch; so those files go to $DATA/inductor_timed,
# which no training reads (docs/data.md, "How kernels are timed"); benchmarks.collector_fidelity --recorded compares the
# fast path's timings with them. inductor-decomposek is the same for the decompose_k shapes.
V2_MA="--search-mode max-autotune --search-space DEFAULT --chunk-size 25 --exclude $HELD_OUT"
V2_DECOMPOSEK="--dtypes float16 bfloat16 --layouts NN NT TN TT --ops mm --max-gflop 20 --m-sizes 16 32 64 128 256 --n-sizes 16 32 64 128 256 --k-sizes 8192 12288 16384 24576 32768 49152 65536 131072"
V2_TMA="--dtypes float16 bfloat16 --layouts NN NT TN TT --ops mm addmm --max-gflop 200 $V2_SIZES --m-sizes 64 128 256 512 1024 2048 4096 8192"
# Cells the draws above left short (benchmarks/results/coverage_h100.json, "missing"): the same
# designs narrowed to the short ops, dtypes and layouts, with seeds of their own.
V2_FILL_BADDBMM="--dtypes float16 --layouts NN TN --ops baddbmm --max-batch 128 --max-gflop 200 $V2_SIZES $V2_M"
V2_FILL_BMM_TT="--dtypes bfloat16 --layouts TT --ops bmm --max-batch 128 --max-gflop 200 $V2_SIZES $V2_M"
V2_F32_BMM="--dtypes float32 --layouts NN NT TN TT --ops bmm baddbmm --max-batch 32 $V2_F32_SIZES"
V2_F32_MM="--dtypes float32 --layouts NN TN TT --ops mm addmm $V2_F32_SIZES"
# fp32 cells still short (fill-f32 without TF32, fill-tf32 with it): the fp32 designs above, each
# drawing only problems of cells short in a snapshot of the coverage report (diode collect
# --fill-cells): every op and layout first (the cheapest problems), then attention, long K and
# vocabulary N for the regime cells left. A design's
# snapshot, $DATA/fill/<gpu>_<f32|tf32>_<design>.json, is written when the design first starts (so
# it counts what the designs before it measured) and kept, so that a killed run draws the same
# problems again and resumes.
V2_F32_ATTN="$F32_ALL --ops bmm baddbmm --min-batch 8 --max-batch 512 --max-gflop 20 --log-normal --log-normal-mean 5.8 --log-normal-sigma 1.1 --min-size 1 --max-size 8192 --k-sizes 32 40 64 72 80 96 128 160 256"
fill_design() {  # DESIGN SEED PRECISION TAG SPEC...
  local design=$1 seed=$2 precision=$3 tag=$4 report
  shift 4
  report="$DATA/fill/${GPU}_${tag}_${design}.json"
  if [ ! -e "$report" ]; then
    mkdir -p "$DATA/fill"
    run_diode dataset coverage "$DATA/train" --targets --report-json "$report" > /dev/null || return $?
  fi
  run_diode collect $V2_SAMPLED "$@" --fill-cells "$report" --float32-matmul-precision "$precision" \
    --num-shapes "${N:-100}" --seed "$seed" -o "$DATA/train/${GPU}_fill_${tag}_${design}.msgpack.gz"
}
fill_fp32() {  # PRECISION TAG FIRST_SEED
  fill_design ops "$3" "$1" "$2" $V2_F32 || return $?
  fill_design attn $(($3 + 1)) "$1" "$2" $V2_F32_ATTN || return $?
  fill_design hugek $(($3 + 2)) "$1" "$2" $V2_F32_HUGEK || return $?
  fill_design vocab $(($3 + 3)) "$1" "$2" $V2_F32_VOCAB
}
# Validation of the coverage design (val-v2-*): held-out problems drawn by the same designs with
# seeds of their own, none of them in h100/train (create-validation never draws those); the
# training parts exclude h100/validation.
VAL="create-validation --train-dataset $DATA/train"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(train-mm train-bmm val-mm val-bmm train-f32 val-f32 train-odd train-decode val-odd train-attn train-f32s train-odd2 train-f32m)
# GPUS=n (a machine of n GPUs): the parts are dealt to the GPUs in turn (part i to GPU i mod n,
# CUDA_VISIBLE_DEVICES), each GPU runs its parts one after another, all GPUs at once. Compiling
# limits a part's rate and each part compiles on its own 14 processes, so n GPUs with the cores
# to match collect about n times as fast (data/logs/collection_v2_x4_h200.log). The
# parts must write different files: give each part once. Exits with the first failing GPU's code.
case ${GPUS:-1} in ''|*[!0-9]*|0) echo "GPUS: expected a number of GPUs (1 or more), got '$GPUS'" >&2; exit 2 ;; esac
if [ "${GPUS:-1}" -gt 1 ]; then
  # remeasure-hinted and remeasure-lead work file by file: their files are dealt to the GPUs as
  # well (remeasure-hinted/g/n: the files i with i mod n = g, in the part's order)
  dealt=()
  for p in "${parts[@]}"; do
    if [ "$p" = remeasure-hinted ] || [ "$p" = remeasure-lead ]; then
      for ((g = 0; g < GPUS; g++)); do dealt+=("$p/$g/$GPUS"); done
    else
      dealt+=("$p")
    fi
  done
  parts=("${dealt[@]}")
  pids=()
  for ((g = 0; g < GPUS; g++)); do
    queue=()
    for ((i = g; i < ${#parts[@]}; i += GPUS)); do queue+=("${parts[$i]}"); done
    [ ${#queue[@]} -gt 0 ] || continue
    # a subshell, so that $! is the one whose code is the GPU's (with a process substitution
    # for the prefix, bash may set $! to the substitution's process)
    (
      CUDA_VISIBLE_DEVICES=$g GPUS=1 bash "$0" "${queue[@]}" 2>&1 | sed -u "s/^/[gpu $g] /"
      exit "${PIPESTATUS[0]}"
    ) &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || { c=$?; [ $rc -ne 0 ] || rc=$c; }; done
  exit $rc
fi
for part in "${parts[@]}"; do
  echo "[$(date +%T)] $part"
  case $part in
    train-mm)  run_diode collect $COMMON $MM --num-shapes 300 --seed 1 -o "$DATA/train/${GPU}_mm.msgpack.gz" ;;
    train-bmm) run_diode collect $COMMON $BMM --num-shapes 90 --seed 2 -o "$DATA/train/${GPU}_bmm.msgpack.gz" ;;
    train-f32) run_diode collect $COMMON $F32 --num-shapes 140 --seed 3 -o "$DATA/train/${GPU}_f32.msgpack.gz" ;;
    val-mm)    run_diode create-validation --train-dataset "$DATA/train" $COMMON $MM --num-shapes 80 --seed 101 -o "$DATA/validation/${GPU}_mm.msgpack.gz" ;;
    val-bmm)   run_diode create-validation --train-dataset "$DATA/train" $COMMON $BMM --num-shapes 25 --seed 102 -o "$DATA/validation/${GPU}_bmm.msgpack.gz" ;;
    val-f32)   run_diode create-validation --train-dataset "$DATA/train" $COMMON $F32 --num-shapes 15 --seed 103 -o "$DATA/validation/${GPU}_f32.msgpack.gz" ;;
    train-odd) run_diode collect $ODD_SAMPLE $ODD --num-shapes 150 --seed 5 -o "$DATA/train/${GPU}_odd.msgpack.gz" ;;
    train-decode) run_diode collect $DECODE_SAMPLE $DECODE --num-shapes 80 --seed 6 -o "$DATA/train/${GPU}_decode.msgpack.gz" ;;
    val-odd)   run_diode create-validation --train-dataset "$DATA/train" $ODD_SAMPLE $ODD --num-shapes 25 --seed 105 -o "$DATA/validation/${GPU}_odd.msgpack.gz" ;;
    train-attn) run_diode collect-shapeset --shapeset attention_odd_tokens $ODD_SAMPLE --exclude $HELD_OUT -o "$DATA/train/${GPU}_attn.msgpack.gz" ;;
    train-f32s) run_diode collect $ODD_SAMPLE $F32 --num-shapes 60 --seed 7 --exclude $HELD_OUT data/h100/train/h100_f32_chunk0000.msgpack.gz -o "$DATA/train/${GPU}_f32s.msgpack.gz" ;;
    train-odd2) run_diode collect $ODD_SAMPLE $ODD --num-shapes 300 --seed 8 --exclude $HELD_OUT data/h100/train/h100_odd_chunk000{0,1,2}.msgpack.gz -o "$DATA/train/${GPU}_odd2.msgpack.gz" ;;
    train-f32m) run_diode collect $ODD_SAMPLE $F32M --num-shapes 60 --seed 9 --exclude $HELD_OUT -o "$DATA/train/${GPU}_f32m.msgpack.gz" ;;
    odd-v1)    run_diode collect $COMMON $ODD_V1 --num-shapes 80 --seed 4 -o "$DATA/odd/${GPU}_odd.msgpack.gz" ;;
    sample-h200-100) run_diode collect-shapeset --shapeset data/h100/sample_h200_100.json $SAMPLED $PER_PROBLEM -o "$DATA/train/${GPU}_sample_h200_100.msgpack.gz" ;;
    realmodels) run_diode collect-shapeset --shapeset realmodels_heldout $V2_ALIGNED -o "$DATA/realmodels/${GPU}_realmodels.msgpack.gz" ;;
    v2-layouts) run_diode collect $V2_ALIGNED $V2_LAYOUTS --num-shapes ${N:-800} --seed 21 -o "$DATA/train/${GPU}_v2_layouts.msgpack.gz" ;;
    v2-hugek)  run_diode collect $V2_ALIGNED $V2_HUGEK --num-shapes ${N:-300} --seed 22 -o "$DATA/train/${GPU}_v2_hugek.msgpack.gz" ;;
    v2-vocab)  run_diode collect $V2_ALIGNED $V2_VOCAB --num-shapes ${N:-300} --seed 23 -o "$DATA/train/${GPU}_v2_vocab.msgpack.gz" ;;
    v2-skinnyk) run_diode collect $V2_ALIGNED $V2_SKINNYK --num-shapes ${N:-300} --seed 24 -o "$DATA/train/${GPU}_v2_skinnyk.msgpack.gz" ;;
    v2-batch)  run_diode collect $V2_ALIGNED $V2_BATCH --num-shapes ${N:-300} --seed 25 -o "$DATA/train/${GPU}_v2_batch.msgpack.gz" ;;
    v2-attn-qk) run_diode collect $V2_SAMPLED $V2_ATTN_QK --num-shapes ${N:-300} --seed 26 -o "$DATA/train/${GPU}_v2_attn_qk.msgpack.gz" ;;
    v2-attn-pv) run_diode collect $V2_SAMPLED $V2_ATTN_PV --num-shapes ${N:-300} --seed 27 -o "$DATA/train/${GPU}_v2_attn_pv.msgpack.gz" ;;
    v2-attn-qk4) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_QK $V2_ATTN4 --num-shapes ${N:-150} --seed 49 -o "$DATA/train/${GPU}_v2_attn_qk4.msgpack.gz" ;;
    v2-attn-pv4) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_PV $V2_ATTN4 --num-shapes ${N:-150} --seed 50 -o "$DATA/train/${GPU}_v2_attn_pv4.msgpack.gz" ;;
    v2-attn-qk4b) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_QK $V2_ATTN4 --num-shapes ${N:-150} --seed 52 -o "$DATA/train/${GPU}_v2_attn_qk4b.msgpack.gz" ;;
    v2-attn-pv4b) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_PV $V2_ATTN4 --num-shapes ${N:-150} --seed 53 -o "$DATA/train/${GPU}_v2_attn_pv4b.msgpack.gz" ;;
    v2-attn-pv-nn) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_PV --layouts NN $V2_ATTN_MODEL --num-shapes ${N:-150} --seed 57 -o "$DATA/train/${GPU}_v2_attn_pv_nn.msgpack.gz" ;;
    v2-attn-qk-nt) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_QK --layouts NT $V2_ATTN_MODEL --num-shapes ${N:-150} --seed 58 -o "$DATA/train/${GPU}_v2_attn_qk_nt.msgpack.gz" ;;
    v2-attn-decode-qk) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_DECODE --layouts NT --k-sizes 64 80 96 128 256 --num-shapes ${N:-100} --seed 63 -o "$DATA/train/${GPU}_v2_attn_decode_qk.msgpack.gz" ;;
    v2-attn-decode-pv) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_DECODE --layouts NN --n-sizes 64 80 96 128 256 --num-shapes ${N:-100} --seed 64 -o "$DATA/train/${GPU}_v2_attn_decode_pv.msgpack.gz" ;;
    v2-attn-decode-pv-long) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ATTN_DECODE_LONG --num-shapes ${N:-200} --seed 66 -o "$DATA/decode_pv_long/${GPU}_v2_attn_decode_pv_long.msgpack.gz" ;;
    v2-odd1b)  run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ODD1 --num-shapes ${N:-200} --seed 54 -o "$DATA/train/${GPU}_v2_odd1b.msgpack.gz" ;;
    v2-odd)    run_diode collect $V2_SAMPLED $V2_ODD --num-shapes ${N:-600} --seed 28 -o "$DATA/train/${GPU}_v2_odd.msgpack.gz" ;;
    v2-odd1)   run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_ODD1 --num-shapes ${N:-400} --seed 51 -o "$DATA/train/${GPU}_v2_odd1.msgpack.gz" ;;
    v2-f32)    run_diode collect $V2_SAMPLED $V2_F32 --float32-matmul-precision highest --num-shapes ${N:-200} --seed 29 -o "$DATA/train/${GPU}_v2_f32.msgpack.gz" ;;
    v2-tf32)   run_diode collect $V2_SAMPLED $V2_F32 --float32-matmul-precision high --num-shapes ${N:-200} --seed 30 -o "$DATA/train/${GPU}_v2_tf32.msgpack.gz" ;;
    v2-f32-odd) run_diode collect $V2_SAMPLED $V2_F32_ODD --float32-matmul-precision highest --num-shapes ${N:-100} --seed 31 -o "$DATA/train/${GPU}_v2_f32_odd.msgpack.gz" ;;
    v2-tf32-odd) run_diode collect $V2_SAMPLED $V2_F32_ODD --float32-matmul-precision high --num-shapes ${N:-100} --seed 32 -o "$DATA/train/${GPU}_v2_tf32_odd.msgpack.gz" ;;
    v2-f32-hugek) run_diode collect $V2_SAMPLED $V2_F32_HUGEK --float32-matmul-precision highest --num-shapes ${N:-20} --seed 35 -o "$DATA/train/${GPU}_v2_f32_hugek.msgpack.gz" ;;
    v2-tf32-hugek) run_diode collect $V2_SAMPLED $V2_F32_HUGEK --float32-matmul-precision high --num-shapes ${N:-20} --seed 36 -o "$DATA/train/${GPU}_v2_tf32_hugek.msgpack.gz" ;;
    v2-f32-vocab) run_diode collect $V2_SAMPLED $V2_F32_VOCAB --float32-matmul-precision highest --num-shapes ${N:-20} --seed 37 -o "$DATA/train/${GPU}_v2_f32_vocab.msgpack.gz" ;;
    v2-tf32-vocab) run_diode collect $V2_SAMPLED $V2_F32_VOCAB --float32-matmul-precision high --num-shapes ${N:-20} --seed 38 -o "$DATA/train/${GPU}_v2_tf32_vocab.msgpack.gz" ;;
    v2-f32-batch) run_diode collect $V2_SAMPLED $V2_F32_BATCH --float32-matmul-precision highest --num-shapes ${N:-20} --seed 39 -o "$DATA/train/${GPU}_v2_f32_batch.msgpack.gz" ;;
    v2-tf32-batch) run_diode collect $V2_SAMPLED $V2_F32_BATCH --float32-matmul-precision high --num-shapes ${N:-20} --seed 40 -o "$DATA/train/${GPU}_v2_tf32_batch.msgpack.gz" ;;
    v2-f32-attn-qk) run_diode collect $V2_SAMPLED $V2_F32_ATTN_QK --float32-matmul-precision highest --num-shapes ${N:-30} --seed 150 -o "$DATA/train/${GPU}_v2_f32_attn_qk.msgpack.gz" ;;
    v2-f32-attn-pv) run_diode collect $V2_SAMPLED $V2_F32_ATTN_PV --float32-matmul-precision highest --num-shapes ${N:-30} --seed 151 -o "$DATA/train/${GPU}_v2_f32_attn_pv.msgpack.gz" ;;
    v2-tf32-attn-qk) run_diode collect $V2_SAMPLED $V2_F32_ATTN_QK --float32-matmul-precision high --num-shapes ${N:-20} --seed 152 -o "$DATA/train/${GPU}_v2_tf32_attn_qk.msgpack.gz" ;;
    v2-tf32-attn-pv) run_diode collect $V2_SAMPLED $V2_F32_ATTN_PV --float32-matmul-precision high --num-shapes ${N:-20} --seed 153 -o "$DATA/train/${GPU}_v2_tf32_attn_pv.msgpack.gz" ;;
    v2-f32-attn-qk-odd) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_F32_ATTN_QK_ODD --float32-matmul-precision highest --num-shapes ${N:-60} --seed 59 -o "$DATA/train/${GPU}_v2_f32_attn_qk_odd.msgpack.gz" ;;
    v2-f32-attn-pv-odd) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_F32_ATTN_PV_ODD --float32-matmul-precision highest --num-shapes ${N:-60} --seed 60 -o "$DATA/train/${GPU}_v2_f32_attn_pv_odd.msgpack.gz" ;;
    v2-tf32-attn-qk-odd) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_F32_ATTN_QK_ODD --float32-matmul-precision high --num-shapes ${N:-40} --seed 61 -o "$DATA/train/${GPU}_v2_tf32_attn_qk_odd.msgpack.gz" ;;
    v2-tf32-attn-pv-odd) run_diode collect $V2_SAMPLED $PER_PROBLEM $V2_F32_ATTN_PV_ODD --float32-matmul-precision high --num-shapes ${N:-40} --seed 62 -o "$DATA/train/${GPU}_v2_tf32_attn_pv_odd.msgpack.gz" ;;
    v2-hidden) run_diode collect $V2_ALIGNED $V2_HIDDEN --num-shapes ${N:-300} --seed 41 -o "$DATA/train/${GPU}_v2_hidden.msgpack.gz" ;;
    v2-fill-baddbmm) run_diode collect $V2_ALIGNED $V2_FILL_BADDBMM --num-shapes ${N:-30} --seed 42 -o "$DATA/train/${GPU}_v2_fill_baddbmm.msgpack.gz" ;;
    v2-fill-bmm-tt) run_diode collect $V2_ALIGNED $V2_FILL_BMM_TT --num-shapes ${N:-15} --seed 43 -o "$DATA/train/${GPU}_v2_fill_bmm_tt.msgpack.gz" ;;
    v2-f32-bmm) run_diode collect $V2_SAMPLED $V2_F32_BMM --float32-matmul-precision highest --num-shapes ${N:-60} --seed 44 -o "$DATA/train/${GPU}_v2_f32_bmm.msgpack.gz" ;;
    v2-tf32-bmm) run_diode collect $V2_SAMPLED $V2_F32_BMM --float32-matmul-precision high --num-shapes ${N:-60} --seed 45 -o "$DATA/train/${GPU}_v2_tf32_bmm.msgpack.gz" ;;
    v2-f32-mm) run_diode collect $V2_SAMPLED $V2_F32_MM --float32-matmul-precision highest --num-shapes ${N:-45} --seed 46 -o "$DATA/train/${GPU}_v2_f32_mm.msgpack.gz" ;;
    v2-tf32-mm) run_diode collect $V2_SAMPLED $V2_F32_MM --float32-matmul-precision high --num-shapes ${N:-45} --seed 47 -o "$DATA/train/${GPU}_v2_tf32_mm.msgpack.gz" ;;
    v2-decomposek) run_diode collect $V2_SAMPLED $V2_DECOMPOSEK --num-shapes ${N:-120} --seed 33 -o "$DATA/train/${GPU}_v2_decomposek.msgpack.gz" ;;
    val-v2-layouts) run_diode $VAL $ALIGNED $V2_LAYOUTS --num-shapes ${N:-150} --seed 121 -o "$DATA/validation/${GPU}_v2_layouts.msgpack.gz" ;;
    val-v2-hidden) run_diode $VAL $ALIGNED $V2_HIDDEN --num-shapes ${N:-80} --seed 141 -o "$DATA/validation/${GPU}_v2_hidden.msgpack.gz" ;;
    val-v2-odd) run_diode $VAL $SAMPLED $V2_ODD --num-shapes ${N:-120} --seed 128 -o "$DATA/validation/${GPU}_v2_odd.msgpack.gz" ;;
    val-v2-odd1) run_diode $VAL $SAMPLED $PER_PROBLEM $V2_ODD1 --num-shapes ${N:-80} --seed 154 -o "$DATA/validation/${GPU}_v2_odd1.msgpack.gz" ;;
    val-v2-attn-qk) run_diode $VAL $SAMPLED $V2_ATTN_QK --num-shapes ${N:-60} --seed 126 -o "$DATA/validation/${GPU}_v2_attn_qk.msgpack.gz" ;;
    val-v2-attn-pv) run_diode $VAL $SAMPLED $V2_ATTN_PV --num-shapes ${N:-60} --seed 127 -o "$DATA/validation/${GPU}_v2_attn_pv.msgpack.gz" ;;
    val-v2-attn4) run_diode $VAL $SAMPLED $PER_PROBLEM $V2_ATTN_QK $V2_ATTN4 --num-shapes ${N:-40} --seed 149 -o "$DATA/validation/${GPU}_v2_attn4.msgpack.gz" ;;
    val-v2-vocab) run_diode $VAL $ALIGNED $V2_VOCAB --num-shapes ${N:-40} --seed 123 -o "$DATA/validation/${GPU}_v2_vocab.msgpack.gz" ;;
    val-v2-hugek) run_diode $VAL $ALIGNED $V2_HUGEK --num-shapes ${N:-40} --seed 122 -o "$DATA/validation/${GPU}_v2_hugek.msgpack.gz" ;;
    inductor-decomposek) run_diode collect $V2_MA $V2_DECOMPOSEK --num-shapes ${N:-120} --seed 33 -o "$DATA/inductor_timed/${GPU}_v2_decomposek.msgpack.gz" ;;
    v2-tma) DIODE="env ENABLE_PERSISTENT_TMA_MATMUL=1 $DIODE" run_diode collect $V2_ALIGNED $V2_TMA --num-shapes ${N:-60} --seed 48 -o "$DATA/train/${GPU}_v2_tma.msgpack.gz" ;;
    val-v2-tma) DIODE="env ENABLE_PERSISTENT_TMA_MATMUL=1 $DIODE" run_diode $VAL $ALIGNED $V2_TMA --num-shapes ${N:-30} --seed 148 -o "$DATA/validation/${GPU}_v2_tma.msgpack.gz" ;;
    fill-f32)  fill_fp32 highest f32 60 || exit $? ;;
    fill-tf32) fill_fp32 high tf32 70 || exit $? ;;
    remeasure-hinted|remeasure-hinted/*|remeasure-lead|remeasure-lead/*)
      # remeasure-hinted: every file's problems whose Triton kernels get layout hints, measured again
      # as the file was (attention and odd sizes first: most of their problems are hinted) into
      # $DATA/remeasured/<folder>/<file>, which resumes; once complete, `diode dataset merge --replace`
      # puts them in place of the old measurements and the file records it (remeasure then leaves it)
      # $DATA/unhinted, where it exists, lists the hinted problems still timed without the hints
      # (data/h100/make_unhinted.py): only those, not the files' others measured with them.
      # remeasure-lead: the same for each file timed without the collector's lead before each flush
      # (timing.LEAD_US), which the H200's short kernels need: its problems whose fastest
      # recorded time is under $LEAD_BELOW_US (default 30) us, the ones whose timings the lead
      # changes (docs/data.md, "How kernels are timed"), into $DATA/remeasured_lead/<folder>/<file>
      kind=${part%%/*}
      shard=0 shards=1
      if [ "$part" != "$kind" ]; then
        IFS=/ read -r _ shard shards <<< "$part"
        case "$shard/$shards" in
          *[!0-9/]*|/*|*/) echo "unknown part $part" >&2; exit 2 ;;
        esac
        [ "$shards" -gt 0 ] && [ "$shard" -lt "$shards" ] || { echo "unknown part $part" >&2; exit 2; }
      fi
      WHICH="--without-lead --below-us ${LEAD_BELOW_US:-30}"
      if [ "$kind" = remeasure-hinted ]; then
        WHICH="--layout-hinted"
        [ -d "$DATA/unhinted" ] && WHICH="$WHICH --only $DATA/unhinted"
      fi
      declare -A seen=()
      index=-1
      for f in "$DATA"/realmodels/*.msgpack.gz "$DATA"/validation/*.msgpack.gz \
               "$DATA"/train/*attn*.msgpack.gz "$DATA"/train/*odd*.msgpack.gz "$DATA"/train/*.msgpack.gz; do
        [ -e "$f" ] && [ -z "${seen[$f]:-}" ] || continue
        seen[$f]=1
        index=$((index + 1))
        [ $((index % shards)) -eq "$shard" ] || continue
        # each kind in a folder of its own: a resumed re-measurement holds one kind's measurements
        dir="$DATA/remeasured/$(basename "$(dirname "$f")")"
        [ "$kind" = remeasure-lead ] && dir="$DATA/remeasured_lead/$(basename "$(dirname "$f")")"
        out="$dir/$(basename "$f")"
        # first asked without the import-time registration (on a GPU machine each process would
        # start CUDA, read the model and import Inductor for it): is there anything to measure again?
        check=$(DIODE=$DIODE_UNREGISTERED run_diode remeasure "$f" $WHICH --dry-run -o "$out") || exit $?
        if [[ $check == *"nothing to do"* ]]; then
          printf '%s\n' "$check"
        else
          # until a run's summary accounts for every problem (measured now or before, none skipped) or
          # a run finds nothing left to measure: a partial re-measurement is never merged
          passes=0
          while :; do
            started=$SECONDS
            log=$(run_diode remeasure "$f" $WHICH --workers 14 -o "$out") || exit $?
            printf '%s\n' "$log"
            case $log in *"nothing to do"*|*"shapes: 0 problems measured"*) break ;; esac
            # the whole process's time, beside the summary's for the measurements alone
            echo "[$(date +%T)] remeasure $f: $((SECONDS - started)) s in all"
            if [[ $log =~ summary:\ ([0-9]+)\ shapes:\ ([0-9]+)\ problems\ measured,\ ([0-9]+)\ already\ done,\ 0\ skipped ]] &&
              ((BASH_REMATCH[2] + BASH_REMATCH[3] == BASH_REMATCH[1])); then
              break
            fi
            passes=$((passes + 1))
            if [ $passes -gt "$RETRIES" ]; then
              echo "remeasure $f: still measuring after $passes runs; not merged (run the part again)" >&2
              exit 1
            fi
          done
        fi
        [ -e "$out" ] || continue  # nothing to measure again in this file
        merged="$dir/$(basename "$f" .msgpack.gz).merged.msgpack.gz"  # one per file: GPUs merge at once
        started=$SECONDS
        DIODE=$DIODE_UNREGISTERED run_diode dataset merge "$f" "$out" --replace -o "$merged" || exit $?
        mv "$merged" "$f" && rm "$out"
        echo "[$(date +%T)] merged into $f in $((SECONDS - started)) s"
      done ;;
    inductor-tma) DIODE="env ENABLE_PERSISTENT_TMA_MATMUL=1 $DIODE" run_diode collect $V2_MA $V2_TMA --num-shapes ${N:-120} --seed 34 -o "$DATA/inductor_timed/${GPU}_v2_tma.msgpack.gz" ;;
    inductor-misaligned)
      # stock max-autotune's own timings (DEFAULT list) of the held-out real models' GEMMs whose
      # rows are misaligned, beside the fast path's in $DATA/realmodels: collector_fidelity
      # --recorded compares the two paths' timings of the same kernels where the model's first
      # picks are weakest. The shapeset (those entries of realmodels_heldout) is written to $TMPDIR.
      shapes="${TMPDIR:-/tmp}/realmodels_heldout_misaligned.json"
      $PYTHON -c '
import json, sys
from torch_diode.collection.shapes import load_shapeset, resolve_shapeset
data = json.loads(resolve_shapeset("realmodels_heldout").read_text())
keep = [e for e, s in zip(data["entries"], load_shapeset("realmodels_heldout")) if s.problem.misaligned_operands]
json.dump({"name": "realmodels_heldout_misaligned", "description": "realmodels_heldout, the misaligned entries", "entries": keep}, open(sys.argv[1], "w"))
' "$shapes" || exit $?
      run_diode collect-shapeset --shapeset "$shapes" --search-mode max-autotune --search-space DEFAULT --chunk-size 25 \
        -o "$DATA/inductor_timed/${GPU}_realmodels_misaligned.msgpack.gz" ;;
    *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
