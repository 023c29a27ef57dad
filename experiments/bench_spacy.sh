#!/usr/bin/env bash
# Side-by-side speed and accuracy of spaCy 3.8's dependency parser and kgparser
# on an UNTAGGED UD treebank (no gold UPOS/XPOS/FEATS at parse time; English-EWT
# unless UD names another).
#
# spaCy is installed in its own virtual environment (never in kgparser's .venv),
# trained as a parser-only CPU pipeline (`spacy init config --pipeline parser
# --optimize efficiency`) on the train file with the tag columns blanked, and both
# parsers then parse dev+test (about 50,000 words for EWT, tags blanked, gold
# tokenization and sentence segmentation) as whole processes on one thread.
# kgparser scores both outputs, and each parser's parse of the test file alone.
# Everything is written under $WORK.
#
#   experiments/bench_spacy.sh setup          # $WORK/venv with spacy==3.8.* (needs PyPI)
#   experiments/bench_spacy.sh data           # train/dev .spacy, devtest.conllu, devtest.gold.conllu
#   experiments/bench_spacy.sh train          # one thread, niced; keeps $WORK/model/model-best
#   experiments/bench_spacy.sh parse [MODEL]  # times spaCy (and kgparser with checkpoint MODEL,
#                                             # e.g. runs/ewt-best/best.pt) REPEATS times, scores
#                                             # both and prints a table; no MODEL: spaCy only
#
# `train` runs in the foreground and logs to $WORK/train.log; for the full run
# start it with nohup.  Settings (environment variables, with defaults):
#   UD=../shared/ud/UD_English-EWT   WORK=../spacy-bench   REPEATS=3
#   SPACY_LANG=   spaCy's language code (default: the treebank's, e.g. en of en_ewt-ud-*.conllu)
#   MAX_EPOCHS=8   MAX_STEPS=0 (no limit)  PATIENCE=1600  EVAL_FREQ=200   (spacy train budget:
#       8 epochs = 3000 steps took 19 min wall, 14 min CPU on the 2-core machine busy with
#       three other trainings; dev LAS was still rising: raise MAX_EPOCHS if time allows)
#   N_SENTS=1      sentences per training Doc (spacy convert -n)
#   KG_BATCH=64    kgparser parse --batch-size
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
UD=${UD:-$REPO/../shared/ud/UD_English-EWT}
PREFIX=$(basename "$(ls "$UD"/*-ud-train.conllu)" -train.conllu)   # e.g. en_ewt-ud
SPACY_LANG=${SPACY_LANG:-${PREFIX%%_*}}
WORK=${WORK:-$(cd "$REPO/.." && pwd)/spacy-bench}
KGPARSER=${KGPARSER:-$REPO/.venv/bin/kgparser}
HELPER=$REPO/experiments/spacy_conllu.py
PY=$WORK/venv/bin/python
REPEATS=${REPEATS:-3}

# One thread for both parsers: numpy/blis (spaCy's thinc) and torch (kgparser).
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1

setup() {
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install 'spacy==3.8.*'
    "$PY" -c 'import spacy; print("spaCy", spacy.__version__)'
}

words_in() {   # syntactic words of a CoNLL-U file (integer IDs only)
    awk -F'\t' '$1 ~ /^[0-9]+$/ {n++} END {print n}' "$1"
}

data() {
    mkdir -p "$WORK"
    # Training data with UPOS/XPOS/FEATS blanked: a parser-only pipeline does not
    # read them, but then nobody has to take that on trust.
    "$PY" "$HELPER" strip "$UD/$PREFIX-train.conllu" "$WORK/train.conllu"
    "$PY" "$HELPER" strip "$UD/$PREFIX-dev.conllu" "$WORK/dev.conllu"
    for split in train dev; do
        "$PY" -m spacy convert "$WORK/$split.conllu" "$WORK" --converter conllu -n "${N_SENTS:-1}"
    done
    # The benchmark text: dev + test, gold for scoring, and the parsers' input
    # with the tags and the gold tree (HEAD, DEPREL, DEPS) blanked.
    cat "$UD/$PREFIX-dev.conllu" "$UD/$PREFIX-test.conllu" > "$WORK/devtest.gold.conllu"
    "$PY" "$HELPER" strip --tree "$WORK/devtest.gold.conllu" "$WORK/devtest.conllu"
    "$PY" "$HELPER" strip --tree "$UD/$PREFIX-test.conllu" "$WORK/test.conllu"   # scored alone
    echo "devtest: $(words_in "$WORK/devtest.conllu") words"
}

train() {
    mkdir -p "$WORK"
    [ -f "$WORK/config.cfg" ] ||
        "$PY" -m spacy init config --lang "$SPACY_LANG" --pipeline parser --optimize efficiency "$WORK/config.cfg"
    uptime | tee "$WORK/train.uptime"
    # `time` reports the whole training; spacy train prints its per-evaluation table.
    # With the kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled),
    # `nice` only ranks processes of one session against each other, so training
    # gets a session of its own whose weight is lowered as well: it then takes
    # about one nice-5 process's share of a machine busy with other training.
    # (In that session Ctrl-C does not reach it: stop it by its pid.)
    { time setsid -w bash -c 'echo 5 > /proc/self/autogroup 2> /dev/null || true; exec nice -n 5 "$@"' \
        niced "$PY" -m spacy train "$WORK/config.cfg" --output "$WORK/model" --gpu-id -1 \
        --paths.train "$WORK/train.spacy" --paths.dev "$WORK/dev.spacy" \
        --training.max_epochs "${MAX_EPOCHS:-8}" --training.max_steps "${MAX_STEPS:-0}" \
        --training.patience "${PATIENCE:-1600}" --training.eval_frequency "${EVAL_FREQ:-200}" ; } \
        2>&1 | tee "$WORK/train.log"
    uptime | tee -a "$WORK/train.uptime"
}

# timed NAME CMD...: runs CMD REPEATS times under /usr/bin/time; appends
# "wall user+sys" per run to $WORK/parse/NAME.times (the table takes the best).
timed() {
    local name=$1 i
    shift
    : > "$WORK/parse/$name.times"
    for ((i = 1; i <= REPEATS; i++)); do
        if ! /usr/bin/time -f '%e %U %S' -o "$WORK/parse/$name.time" "$@" 2> "$WORK/parse/$name.stderr"; then
            cat "$WORK/parse/$name.stderr" >&2
            exit 1
        fi
        awk '{printf "%s %.2f\n", $1, $2 + $3}' "$WORK/parse/$name.time" >> "$WORK/parse/$name.times"
        echo "$name run $i: $(tail -1 "$WORK/parse/$name.times") (wall s, CPU s); $(grep -h 'words/s' "$WORK/parse/$name.stderr" | tail -1)"
    done
}

parse() {
    local model=${1:-} words
    mkdir -p "$WORK/parse"
    words=$(words_in "$WORK/devtest.conllu")
    uptime | tee "$WORK/parse/uptime"
    timed spacy "$PY" "$HELPER" parse "$WORK/model/model-best" "$WORK/devtest.conllu" "$WORK/parse/spacy.conllu"
    "$KGPARSER" evaluate --json "$WORK/devtest.gold.conllu" "$WORK/parse/spacy.conllu" > "$WORK/parse/spacy.json"
    if [ -n "$model" ]; then
        timed kgparser "$KGPARSER" parse -m "$model" --threads 1 --batch-size "${KG_BATCH:-64}" \
            "$WORK/devtest.conllu" -o "$WORK/parse/kgparser.conllu"
        "$KGPARSER" evaluate --json "$WORK/devtest.gold.conllu" "$WORK/parse/kgparser.conllu" > "$WORK/parse/kgparser.json"
    else
        rm -f "$WORK/parse/kgparser.times" "$WORK/parse/kgparser.json"
        echo "no kgparser MODEL given: kgparser skipped (bench_spacy.sh parse path/to/best.pt)"
    fi
    uptime | tee -a "$WORK/parse/uptime"
    # the test file alone (untimed): the accuracy figures of BENCHMARKS.md
    "$PY" "$HELPER" parse "$WORK/model/model-best" "$WORK/test.conllu" "$WORK/parse/spacy-test.conllu" 2> /dev/null
    echo "spacy, test alone: $("$KGPARSER" evaluate "$UD/$PREFIX-test.conllu" "$WORK/parse/spacy-test.conllu" | head -3 | tr '\n' ' ')"
    if [ -n "$model" ]; then
        "$KGPARSER" parse -m "$model" --threads 1 "$WORK/test.conllu" -o "$WORK/parse/kgparser-test.conllu" 2> /dev/null
        echo "kgparser, test alone: $("$KGPARSER" evaluate "$UD/$PREFIX-test.conllu" "$WORK/parse/kgparser-test.conllu" | head -3 | tr '\n' ' ')"
    fi
    "$WORK/venv/bin/python" - "$WORK/parse" "$words" "$model" <<'EOF'
import json, os, sys
d, words, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = {}
print(f"best of the runs in {d}/*.times (wall and CPU minimised separately);"
      " kgparser evaluate: punctuation scored, LAS with full labels (subtypes)")
print("| parser | words | wall s | CPU s | words/wall s | words/CPU s | UAS | LAS |")
print("|---|---|---|---|---|---|---|---|")
for name in ("spacy", "kgparser"):
    if not os.path.exists(f"{d}/{name}.times"):
        continue
    runs = [tuple(map(float, line.split())) for line in open(f"{d}/{name}.times")]
    wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    s = json.load(open(f"{d}/{name}.json"))
    rows[name] = cpu
    print(f"| {name} | {words} | {wall:.1f} | {cpu:.1f} | {words / wall:.0f} | {words / cpu:.0f} "
          f"| {100 * s['uas']:.2f} | {100 * s['las']:.2f} |")
if len(rows) == 2:
    print(f"kgparser/spaCy speed (words per CPU second): {rows['spacy'] / rows['kgparser']:.2f}"
          f"  [kgparser model: {model}]")
EOF
}

case "${1:-}" in
    setup|data|train) "$1" ;;
    parse) parse "${2:-}" ;;
    *) sed -n '2,29p' "$0"; exit 2 ;;
esac
