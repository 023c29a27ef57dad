"""CoNLL-U helpers for experiments/bench_spacy.sh, run with the spaCy venv's python.

    python spacy_conllu.py strip [--tree] IN OUT   # UPOS, XPOS, FEATS -> '_' (--tree: HEAD, DEPREL, DEPS too)
    python spacy_conllu.py parse MODEL IN OUT      # parse IN's words with a spaCy pipeline
    python spacy_conllu.py parse-raw MODEL TEXT OUT   # tokenize, split and parse raw TEXT with it

Both parse commands also write UPOS and FEATS where the pipeline sets them
(a morphologizer or tagger), and leave the input's where it does not.
Only the standard library is used for CoNLL-U (spaCy is imported by the
parse commands alone).  Of kgparser only its torch-free file writer is
imported, from the source tree (kgparser is not installed in spaCy's
environment), so that outputs are written as kgparser's are: a regular file
replaced whole or not at all, a symlink's target written, a device or FIFO
streamed; the two parsers share no other code.
"""
import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kgparser.errors import KgparserError  # noqa: E402
from kgparser.io.atomic import atomic_open  # noqa: E402

UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC = 3, 4, 5, 6, 7, 8, 9


def is_word(cols):
    """True for a syntactic word line: an integer ID (not 1-2 multiword tokens, not 1.1 empty nodes)."""
    return cols[0].isdigit()


def sentences(path):
    """Yield each sentence of a CoNLL-U file as a list of lines (comments and all, without newlines)."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                lines.append(line)
            elif lines:
                yield lines
                lines = []
    if lines:
        yield lines


def strip(src, dst, tree=False):
    """Write SRC with the tag columns (and, with TREE, the gold tree columns) of every word set to '_'."""
    blank = (UPOS, XPOS, FEATS) + ((HEAD, DEPREL, DEPS) if tree else ())
    with atomic_open(dst) as out:
        for sent in sentences(src):
            for line in sent:
                cols = line.split("\t")
                if len(cols) == 10 and not line.startswith("#") and "-" not in cols[0]:
                    for i in blank:  # word lines and empty nodes (an empty node's HEAD is '_' anyway)
                        cols[i] = "_"
                    line = "\t".join(cols)
                out.write(line + "\n")
            out.write("\n")


def label(token):
    """TOKEN's dependency label: deprojectivized labels should be plain, so any leftover "||head" goes."""
    return token.dep_.split("||")[0] or "dep"


def set_tags(cols, token):
    """UPOS and FEATS of TOKEN into COLS where the pipeline set them (a parser-only pipeline sets neither)."""
    if token.pos_:
        cols[UPOS] = token.pos_
    if token.has_morph():
        cols[FEATS] = str(token.morph) or "_"


def parse(model, src, dst, batch_size=None):
    """Parse the gold-tokenized sentences of SRC with the spaCy pipeline MODEL; write SRC with HEAD/DEPREL filled.

    One Doc per sentence, built from the word lines only, with every token but the
    first marked as not starting a sentence, so that spaCy keeps the gold segmentation.
    Other lines (comments, multiword tokens, empty nodes) are copied unchanged.
    """
    import spacy
    from spacy.tokens import Doc

    t0 = time.perf_counter()
    nlp = spacy.load(model)
    t1 = time.perf_counter()
    sents = list(sentences(src))

    def docs():
        for sent in sents:
            words = [line.split("\t") for line in sent if is_word(line.split("\t", 1))]
            doc = Doc(nlp.vocab, words=[c[1] for c in words],
                      spaces=["SpaceAfter=No" not in c[MISC].split("|") for c in words])
            for i, token in enumerate(doc):
                token.is_sent_start = i == 0
            yield doc

    n_words = n_roots = 0
    with atomic_open(dst) as out:
        for sent, doc in zip(sents, nlp.pipe(docs(), batch_size=batch_size)):
            tokens = iter(doc)
            for line in sent:
                cols = line.split("\t")
                if not line.startswith("#") and is_word(cols):
                    token = next(tokens)
                    n_words += 1
                    if token.head.i == token.i:
                        cols[HEAD], cols[DEPREL] = "0", "root"
                        n_roots += 1
                    else:
                        cols[HEAD], cols[DEPREL] = str(token.head.i + 1), label(token)
                    set_tags(cols, token)
                    line = "\t".join(cols)
                out.write(line + "\n")
            out.write("\n")
    t2 = time.perf_counter()
    print(f"spaCy {spacy.__version__}: {len(sents)} sentences, {n_words} words, {n_roots} roots; "
          f"load {t1 - t0:.1f} s, read+parse+write {t2 - t1:.1f} s ({n_words / (t2 - t1):.0f} words/s)",
          file=sys.stderr)


def paragraphs(text):
    """The paragraphs of TEXT: the runs of text between blank lines, without white space around them."""
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def raw_sentence(sent):
    """The CoNLL-U word lines of one spaCy sentence SENT, white-space tokens left out.

    A white-space token (white space inside a paragraph beyond one space) is
    no word: a word hanging from one hangs from that token's first head that
    is a word; where that is none (a white-space root), the sentence may be
    left with several roots: the one with the most words under it stays root,
    the others hang from it (their number is returned with the lines).
    """
    doc, words = sent.doc, [t for t in sent if not t.is_space]
    ids = {t.i: n for n, t in enumerate(words, 1)}
    heads, fixed = [], 0
    for t in words:
        h = t.head
        while h.is_space and h.head.i != h.i:
            h = h.head
        heads.append(0 if h.i == t.i or h.i not in ids else ids[h.i])
    roots = [n for n, h in enumerate(heads, 1) if h == 0]
    if len(roots) > 1:
        def size(n):   # words under word n (n included)
            return 1 + sum(size(m) for m, h in enumerate(heads, 1) if h == n)
        main = max(roots, key=size)
        for n in roots:
            if n != main:
                heads[n - 1] = main
                fixed += 1
    lines = []
    for n, (t, h) in enumerate(zip(words, heads), 1):
        end = t.idx + len(t.text)
        misc = "_" if end == len(doc.text) or doc.text[end].isspace() else "SpaceAfter=No"
        rel = "root" if h == 0 else ("dep" if t.head.i == t.i else label(t))
        cols = [str(n), t.text, "_", "_", "_", "_", str(h), rel, "_", misc]
        set_tags(cols, t)
        lines.append("\t".join(cols))
    return lines, fixed


def parse_raw(model, src, dst, batch_size=None):
    """Parse the raw text SRC with the whole spaCy pipeline MODEL: its tokenizer, its parser's sentences, its tags.

    The text is cut into paragraphs at blank lines, one Doc each; each of
    doc.sents is written as a sentence, its words the Doc's tokens
    (white-space tokens left out), with `# newpar` on a paragraph's first
    sentence, `# sent_id`, `# text` and SpaceAfter=No where no white space
    follows a word in its paragraph.
    """
    import spacy

    t0 = time.perf_counter()
    nlp = spacy.load(model)
    t1 = time.perf_counter()
    with open(src, encoding="utf-8") as f:
        text = f.read()
    paras = paragraphs(text)
    n_sents = n_words = n_fixed = 0
    with atomic_open(dst) as out:
        for doc in nlp.pipe(paras, batch_size=batch_size):
            first = True
            for sent in doc.sents:
                lines, fixed = raw_sentence(sent)
                if not lines:
                    continue
                n_sents += 1
                n_words += len(lines)
                n_fixed += fixed
                if first:
                    out.write("# newpar\n")
                    first = False
                out.write(f"# sent_id = {n_sents}\n# text = {' '.join(sent.text.split())}\n")
                out.write("\n".join(lines) + "\n\n")
    t2 = time.perf_counter()
    print(f"spaCy {spacy.__version__}: {len(paras)} paragraphs, {n_sents} sentences, {n_words} words "
          f"({n_fixed} extra roots re-attached); load {t1 - t0:.1f} s, "
          f"read+parse+write {t2 - t1:.1f} s ({n_words / (t2 - t1):.0f} words/s)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("strip", help="blank the tag columns (and with --tree the tree columns)")
    s.add_argument("--tree", action="store_true")
    s.add_argument("src")
    s.add_argument("dst")
    p = sub.add_parser("parse", help="parse with a spaCy pipeline")
    p.add_argument("model")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--batch-size", type=int, default=None, help="nlp.pipe batch size (default: the pipeline's)")
    r = sub.add_parser("parse-raw", help="tokenize, split into sentences and parse raw text with a spaCy pipeline")
    r.add_argument("model")
    r.add_argument("src", help="raw text (paragraphs separated by blank lines)")
    r.add_argument("dst")
    r.add_argument("--batch-size", type=int, default=None, help="nlp.pipe batch size (default: the pipeline's)")
    args = ap.parse_args()
    try:
        if args.cmd == "strip":
            strip(args.src, args.dst, args.tree)
        elif args.cmd == "parse":
            parse(args.model, args.src, args.dst, args.batch_size)
        else:
            parse_raw(args.model, args.src, args.dst, args.batch_size)
    except KgparserError as error:  # a file that cannot be written: one line naming it
        sys.exit(f"spacy_conllu.py: {error}")


if __name__ == "__main__":
    main()
