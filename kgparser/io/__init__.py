"""What goes in and out: the one reader (:mod:`~kgparser.io.reader`), CoNLL-U
(:mod:`~kgparser.io.conllu`), pre-tokenized text (:mod:`~kgparser.io.plaintext`),
raw text whatever segments it (:mod:`~kgparser.io.rawtext`), pictures of trees
(:mod:`~kgparser.io.render`), the one safe-write path
(:mod:`~kgparser.io.atomic`), locks (:mod:`~kgparser.io.locking`), YAML text
(:mod:`~kgparser.io.yaml_text`), the progress line
(:mod:`~kgparser.io.progress`) and child processes that end with their parent
(:mod:`~kgparser.io.parent_death`).  Nothing here imports torch.
"""
