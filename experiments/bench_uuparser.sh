#!/usr/bin/env bash
# Side-by-side speed and accuracy of UUParser and kgparser on a UD treebank
# (English-EWT unless UD says otherwise), with gold UPOS or without any tags.
#
# UUParser (de Lhoneux, Stymne & Nivre 2017; Smith et al. 2018) is the DyNet
# BiLSTM parser that kgparser's arc-hybrid(+swap) models follow.  This script
# installs release 2.4 from PyPI (the code of https://github.com/UppsalaNLP/uuparser)
# in its own virtual environment, trains it on the treebank's train file with
# gold UPOS (TAGS=0: without tags, UUParser's own default), scores the dev
# parse after every epoch, parses the test file with a saved model, and prints
# a table comparable with the kgparser figures in docs/results.md.
# No UUParser code is kept in this repository.
#
#   experiments/bench_uuparser.sh setup           # venv + dyNET38 + uuparser 2.4 (needs PyPI)
#   experiments/bench_uuparser.sh train           # trains EPOCHS epochs (default 30), one thread
#   experiments/bench_uuparser.sh resume          # continues an interrupted train from its last epoch
#   experiments/bench_uuparser.sh table           # per-epoch seconds, tokens/s, dev UAS/LAS
#   experiments/bench_uuparser.sh parse [EPOCH]   # times the test parse with that epoch's model
#                                                 # (default: the latest saved) and scores it
#
# `train` runs in the foreground; for long runs start it with nohup and call
# `table` while it runs.  Settings (environment variables, with defaults):
#   UD=../shared/ud/UD_English-EWT   WORK=../uuparser-bench   EPOCHS=30
#   TAGS=25   the UPOS embedding size; 0: no tags anywhere (the train, dev and test
#             files are read with UPOS, XPOS and FEATS blanked, copies under $WORK/data)
#   UUPARSER_SRC=                    a git checkout to install instead of PyPI's 2.4, e.g.
#       git clone https://github.com/UppsalaNLP/uuparser && UUPARSER_SRC=$PWD/uuparser
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
UD=${UD:-$REPO/../shared/ud/UD_English-EWT}
WORK=${WORK:-$REPO/../uuparser-bench}
EPOCHS=${EPOCHS:-30}
KGPARSER=${KGPARSER:-$REPO/.venv/bin/kgparser}
TAGS=${TAGS:-25}
MODELDIR=$WORK/model
LOG=$MODELDIR/uuparser.log           # loguru's DEBUG log, millisecond timestamps
PREFIX=$(basename "$(ls "$UD"/*-ud-train.conllu)" -train.conllu)   # e.g. en_ewt-ud
GOLD_DEV=$UD/$PREFIX-dev.conllu GOLD_TEST=$UD/$PREFIX-test.conllu
DATA=$UD                             # what UUParser reads: the treebank, or its tagless copies
[ "$TAGS" = 0 ] && DATA=$WORK/data

# DyNet is single-threaded on CPU; pin the BLAS/OpenMP pools too, as kgparser's threads: 1.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# uuparser scores dev with its CoNLL 2017 script through a bare `python`.
export PATH=$WORK/venv/bin:$PATH

setup() {
    python3 -m venv "$WORK/venv"
    # uuparser's metadata asks for `dynet`, which has no wheels for Python >= 3.8;
    # dyNET38 is the fork that does and provides the same `dynet` module.
    "$WORK/venv/bin/pip" install dynet38==2.2 numpy h5py loguru tqdm
    "$WORK/venv/bin/pip" install --no-deps "${UUPARSER_SRC:-uuparser==2.4}"
}

tagless_copies() {   # TAGS=0: the three files with UPOS, XPOS and FEATS blanked
    mkdir -p "$DATA"
    for split in train dev test; do
        python3 "$REPO/experiments/spacy_conllu.py" strip "$UD/$PREFIX-$split.conllu" "$DATA/$PREFIX-$split.conllu"
    done
}

# UUParser's defaults (arc-hybrid + swap, static-dynamic oracle, 100-d words,
# 500-d characters through a 100-d char BiLSTM, 2 x 125 BiLSTM, MLP 100) plus
# TAGS-d UPOS embeddings: its default --pos-emb-size is 0 (no tags).
uuparser_train() {
    uuparser --trainfile "$DATA/$PREFIX-train.conllu" --devfile "$DATA/$PREFIX-dev.conllu" \
        --outdir "$MODELDIR" --epochs "$EPOCHS" --pos-emb-size "$TAGS" \
        --dynet-seed 1 --dynet-mem 2000 --logfile "$LOG" "$@"
}

train() {
    mkdir -p "$WORK"
    [ "$TAGS" = 0 ] && tagless_copies
    uptime > "$WORK/train.uptime"
    uuparser_train
}

# Continue an interrupted `train` from its latest saved epoch (UUParser's own
# --continue).  DyNet saves the weights but not the trainer, so Adam's moment
# estimates restart from zero at the first resumed epoch.
resume() {
    local last
    last=$(latest_epoch)
    [ -n "$last" ] || { echo "no saved epoch in $MODELDIR: run train first" >&2; exit 1; }
    uptime >> "$WORK/train.uptime"
    uuparser_train --continue --continueModel "$MODELDIR/barchybrid.model$last" --first-epoch $((last + 1))
}

latest_epoch() {
    ls "$MODELDIR" | sed -n 's/^barchybrid\.model\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1
}

words_in() {   # syntactic words of a CoNLL-U file (integer IDs only)
    awk -F'\t' '$1 ~ /^[0-9]+$/ {n++} END {print n}' "$1"
}

parse() {
    local epoch=${1:-$(latest_epoch)}
    local out=$WORK/test-epoch$epoch test=$DATA/$PREFIX-test.conllu start end
    mkdir -p "$out"
    rm -f "$out/uuparser.log"   # loguru appends: a second parse would read the first one's times
    uptime | tee "$out/uptime"
    start=$(date +%s.%N)
    TIMEFORMAT="uuparser --predict: %R s wall, %U s user + %S s system CPU"
    time uuparser --predict --testfile "$test" --modeldir "$MODELDIR" --model "barchybrid.model$epoch" \
        --outdir "$out" --disable-pred-eval --logfile "$out/uuparser.log"
    end=$(date +%s.%N)
    python3 - "$start" "$end" "$(words_in "$test")" "$out/uuparser.log" <<'EOF'
import sys
from datetime import datetime
start, end, words, log = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def stamp(line):
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()
lines = open(log, encoding="utf-8").read().splitlines()
loaded = stamp(next(l for l in lines if "Loading model" in l))
written = stamp([l for l in lines if "Writing to" in l][-1])
print(f"test words {words}; whole command {end - start:.1f} s ({words / (end - start):.0f} tokens/s); "
      f"parsing after the model is loaded {written - loaded:.1f} s ({words / (written - loaded):.0f} tokens/s)")
EOF
    "$KGPARSER" evaluate "$GOLD_TEST" "$out/out.conllu"
}

# Per epoch from the log: training = Train() alone (after the train file is
# read), dev parse = "Predicting on dev data" to the written dev file.
table() {
    python3 - "$LOG" "$MODELDIR" "$(words_in "$UD/$PREFIX-train.conllu")" \
        "$(words_in "$GOLD_DEV")" "$GOLD_DEV" "$KGPARSER" <<'EOF'
import json, re, subprocess, sys
from datetime import datetime
log, modeldir, train_words, dev_words, dev_gold, kgparser = sys.argv[1:]
train_words, dev_words = int(train_words), int(dev_words)
def stamp(line):
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()
events = {}   # epoch -> {event: time}
epoch = 0
for line in open(log, encoding="utf-8"):
    if m := re.search(r"Starting epoch (\d+)", line):
        epoch = int(m.group(1))
    for key, pattern in (("train", "Length of training data"), ("trained", "Finished epoch"),
                         ("dev", "Predicting on dev data"), ("parsed", r"Writing to .*dev_epoch_\d+\.conllu$")):
        if epoch and re.search(pattern, line.rstrip()):
            events.setdefault(epoch, {})[key] = stamp(line)
print("| epoch | training s | training tokens/s | dev parse s | dev parse tokens/s | dev UAS | dev LAS |")
print("|---|---|---|---|---|---|---|")
for epoch, t in sorted(events.items()):
    if "parsed" not in t:
        continue
    train_s, dev_s = t["trained"] - t["train"], t["parsed"] - t["dev"]
    scores = json.loads(subprocess.run([kgparser, "evaluate", "--json", dev_gold,
                                        f"{modeldir}/dev_epoch_{epoch}.conllu"],
                                       check=True, capture_output=True, text=True).stdout)
    print(f"| {epoch} | {train_s:.0f} | {train_words / train_s:.0f} | {dev_s:.0f} | {dev_words / dev_s:.0f} "
          f"| {100 * scores['uas']:.2f} | {100 * scores['las']:.2f} |")
EOF
}

case "${1:-}" in
    setup|train|resume|table) "$1" ;;
    parse) parse "${2:-}" ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
esac
