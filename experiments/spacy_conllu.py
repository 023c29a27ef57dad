"""CoNLL-U helpers for experiments/bench_spacy.sh, run with the spaCy venv's python.

    python spacy_conllu.py strip [--tree] IN OUT   # UPOS, XPOS, FEATS -> '_' (--tree: HEAD, DEPREL, DEPS too)
    python spacy_conllu.py parse MODEL IN OUT      # parse IN's words with a spaCy pipeline

Only the standard library is used for CoNLL-U (spaCy is imported by `parse`
alone); kgparser is not imported, so the two parsers share no code.
"""
import argparse
import sys
import time

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
    with open(dst, "w", encoding="utf-8") as out:
        for sent in sentences(src):
            for line in sent:
                cols = line.split("\t")
                if len(cols) == 10 and not line.startswith("#") and "-" not in cols[0]:
                    for i in blank:  # word lines and empty nodes (an empty node's HEAD is '_' anyway)
                        cols[i] = "_"
                    line = "\t".join(cols)
                out.write(line + "\n")
            out.write("\n")


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
    with open(dst, "w", encoding="utf-8") as out:
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
                        # deprojectivized labels should be plain; drop any leftover "||head" decoration
                        cols[HEAD], cols[DEPREL] = str(token.head.i + 1), token.dep_.split("||")[0] or "dep"
                    line = "\t".join(cols)
                out.write(line + "\n")
            out.write("\n")
    t2 = time.perf_counter()
    print(f"spaCy {spacy.__version__}: {len(sents)} sentences, {n_words} words, {n_roots} roots; "
          f"load {t1 - t0:.1f} s, read+parse+write {t2 - t1:.1f} s ({n_words / (t2 - t1):.0f} words/s)",
          file=sys.stderr)


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
    args = ap.parse_args()
    if args.cmd == "strip":
        strip(args.src, args.dst, args.tree)
    else:
        parse(args.model, args.src, args.dst, args.batch_size)


if __name__ == "__main__":
    main()
