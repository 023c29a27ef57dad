"""Give a checkpoint trained before the lemma lexicon (kgparser/lemma.py,
``LemmaLexicon``) the lexicon its training file teaches, as training now
stores it.  The lexicon changes no weight (training never reads it), so the
result is the checkpoint retraining would give; it measures the lexicon on
models trained before it (docs/history/model-tokenizer.md, "The lemma lexicon").

    python experiments/add_lemma_lexicon.py CHECKPOINT TRAIN.conllu OUT.pt
"""
import argparse

from kgparser.io.conllu import read_conllu
from kgparser.lemma import LemmaLexicon
from kgparser.model.checkpoint import load_checkpoint, save_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("train", help="the CoNLL-U file the checkpoint was trained on")
    parser.add_argument("out", help="the new checkpoint (never the old one's path)")
    args = parser.parse_args()
    if args.out == args.checkpoint:
        parser.error("OUT must not be CHECKPOINT")
    data = load_checkpoint(args.checkpoint)
    data["model"]["vocabs"]["lemma_lexicon"] = LemmaLexicon.from_sentences(read_conllu(args.train)).to_data()
    save_checkpoint(data, args.out)


if __name__ == "__main__":
    main()
