"""What goes in and out: CoNLL-U (:mod:`~kgparser.io.conllu`), pre-tokenized
text (:mod:`~kgparser.io.plaintext`), pictures of trees
(:mod:`~kgparser.io.render`), the one safe-write path
(:mod:`~kgparser.io.atomic`), locks (:mod:`~kgparser.io.locking`), YAML text
(:mod:`~kgparser.io.yaml_text`) and the progress line
(:mod:`~kgparser.io.progress`).  Nothing here imports torch.
"""
