#!/usr/bin/env bash
# The seeds' tutorial, end to end: collect -> train -> create-validation -> validate-model ->
# validate-max-autotune. Runs on a GPU (fast collection of Inductor's kernels) and on a CPU
# (Inductor's own max-autotune of bmm with the CPP and ATen backends: small, but the same path).
#   bash workflows/tutorial.sh [WORKDIR]        (default: a new temporary folder)
# Knobs: SHAPES (problems to collect, default 40 on a GPU, 6 on a CPU), EPOCHS (default 60).
set -euo pipefail
WORK=${1:-$(mktemp -d -t diode_tutorial_XXXX)}
DIODE=${DIODE:-"python3 -m torch_diode.cli"}
mkdir -p "$WORK"
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  SHAPES=${SHAPES:-40}
  COLLECT="--search-mode fast --exhaustive-sample 100 --ops mm addmm bmm --dtypes float16 bfloat16 --max-batch 16
           --sizes 64 128 256 512 1024 2048 4096 --layouts NN NT --max-gflop 50"
else
  SHAPES=${SHAPES:-6}
  COLLECT="--device cpu --search-mode max-autotune --backends CPP,ATEN --ops bmm --dtypes float32 --max-batch 4 --min-size 16 --max-size 96"
fi
EPOCHS=${EPOCHS:-60}
echo "== 1. collect $SHAPES problems into $WORK/train.json"
$DIODE collect $COLLECT --num-shapes "$SHAPES" --seed 1 -o "$WORK/train.json"
echo "== 2. train a model"
$DIODE train --dataset "$WORK/train.json" --model "$WORK/model.diode" --num-epochs "$EPOCHS" --seed 0
echo "== 3. a validation set sharing no problem with the training set"
$DIODE create-validation --train-dataset "$WORK/train.json" $COLLECT --num-shapes $(( (SHAPES + 3) / 4 )) --seed 2 \
  -o "$WORK/validation.json"
echo "== 4. validate the model"
$DIODE validate-model --model "$WORK/model.diode" --dataset "$WORK/validation.json" --top-n-worst 5 \
  --report-json "$WORK/validate_model.json"
echo "== 5. compare its picks with max-autotune's"
$DIODE validate-max-autotune --model "$WORK/model.diode" --dataset "$WORK/validation.json" \
  --report-json "$WORK/validate_max_autotune.json"
echo "done: everything is in $WORK"
