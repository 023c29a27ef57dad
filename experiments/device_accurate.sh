#!/usr/bin/env bash
# The accurate recipes on a lent 16-core GPU machine, in one ~9-minute command
# (docs/history/pretrained-encoder.md, "Pretrained knowledge").  Every training is
# one process on one thread; EWT's run on the GPU (device=cuda), the others on
# the CPU.  Each training is stopped after LIMIT seconds if not done (its
# best.pt is then the best dev epoch reached), then parses the test file with
# its own tagger (--tags predict: the test file's tags are not read) and is
# scored.  Expects, under DATA (default .devdata):
#   encoder/       multilingual-e5-small packed for the three treebanks (30 MB):
#                  python experiments/compact_encoder.py pack embeddings/multilingual-e5-small
#                  .devdata/encoder UD_*/{en_ewt,hu_szeged,tr_imst}-ud-{train,dev,test}.conllu
#   ud/*.conllu.gz English-EWT, Hungarian-Szeged, Turkish-IMST
#   wheels/*.whl   what the machine lacks (conllu)
# Usage: [SET=levers] experiments/device_accurate.sh OUT_DIR [LIMIT_SECONDS]
# (SET=recipes, the default: the recipes' seeds and variants; SET=levers: the Hungarian levers of session 28)
# (EXTRA='--set ...' is added to every training; EWT_DEVICE=cpu runs EWT on the CPU, EWT=0 not at all)
set -uo pipefail
OUT=${1:?usage: device_accurate.sh OUT_DIR [LIMIT]}; LIMIT=${2:-470}
DATA=${DATA:-.devdata}; UD=$PWD/$DATA/ud; R=${RUNS:-/tmp/accurate}
mkdir -p "$R" "$OUT"
source experiments/device_setup.sh

data() {  # treebank prefix -> the three --set options
  echo "--set data.train=$UD/$1-ud-train.conllu.gz --set data.dev=$UD/$1-ud-dev.conllu.gz --set data.test=$UD/$1-ud-test.conllu.gz"
}
run() {  # NAME CONFIG TREEBANK [--set ...]: train, then parse and score the test file
  local name=$1 config=$2 bank=$3; shift 3
  timeout -s INT "$LIMIT" python3 -m kgparser train "$config" $(data "$bank") --set output_dir="$R/$name" \
      --set training.progress=false "$@" ${EXTRA:-} > "$R/$name.log" 2>&1
  python3 -m kgparser parse --model "$R/$name/best.pt" --tags predict "$UD/$bank-ud-test.conllu.gz" \
      -o "$R/$name/test.pred.conllu" >> "$R/$name.log" 2>&1
  python3 -m kgparser evaluate "$UD/$bank-ud-test.conllu.gz" "$R/$name/test.pred.conllu" --json > "$R/$name/test.json" 2>> "$R/$name.log"
}
HU=configs/hu-accurate.yaml
recipes() {  # the three recipes' seeds, and variants of the Hungarian one (frozen ones say finetune=false)
  for s in 1 2 3; do
    [ "${EWT:-1}" = 0 ] || run ewt-acc-s$s configs/ewt-accurate.yaml en_ewt --set seed=$s --set device=${EWT_DEVICE:-cuda} &
    run hu-acc-s$s $HU hu_szeged --set seed=$s &
    run tr-acc-s$s $HU tr_imst --set seed=$s --set training.epochs=20 &
  done
  local frozen="--set model.encoder.finetune=false"
  run hu-l8-s1 $HU hu_szeged --set model.encoder.layers=8 &
  run hu-first-s1 $HU hu_szeged --set model.encoder.pooling=first &
  run hu-frozen-s1 $HU hu_szeged $frozen &
  run hu-l8q-s1 $HU hu_szeged $frozen --set model.encoder.layers=8 --set model.encoder.quantize=true &
  run hu-nochar-s1 $HU hu_szeged --set model.char_dim=0 &
  run hu-l0-s1 $HU hu_szeged $frozen --set model.encoder.layers=0 &
}
levers() {  # the Hungarian recipe's levers for UPOS, two seeds each, 14 trainings on the GPU (MPS shares it)
  nvidia-cuda-mps-control -d || echo "no MPS: the trainings take turns on the GPU"
  local lever name setting sets
  for s in 1 2; do
    for lever in base "l8 model.encoder.layers=8" "l12 model.encoder.layers=12" "tagw2 model.tagger.loss_weight=2.0" \
        "tagh model.tagger.hidden=256" "lr1e4 model.encoder.lr=1.0e-4" \
        "l12w2 model.encoder.layers=12 model.tagger.loss_weight=2.0"; do
      set -- $lever; name=$1; shift; sets=()
      for setting in "$@"; do sets+=(--set "$setting"); done
      run hu-$name-s$s $HU hu_szeged --set seed=$s --set device=cuda --set threads=1 "${sets[@]}" &
    done
  done
}
${SET:-recipes}
wait
cd "$R" && tar czf "$OUT/accurate.tgz" --exclude='*.pt' --exclude='tensorboard' --exclude='events.*' . && ls -la "$OUT"
