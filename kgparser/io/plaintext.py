"""Pre-tokenized plain text as parser input (``kgparser parse --input-format text``):
one sentence per line, tokens separated by white space (so a Windows line
end, CRLF, is one too), blank lines skipped; a token with a control character
is an error naming its line.

Each line becomes a CoNLL-U sentence with ``# sent_id = N`` (N counts the
sentences from 1), ``# text = ...`` (the tokens joined by single spaces) and
``_`` in every column but ID and FORM, so the parser (with
``--tags auto``, its tagger) fills in the rest and the output is ordinary
CoNLL-U.  Raw text is read by :mod:`kgparser.io.rawtext` (``--input-format raw``),
which tokenizes it first.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from .conllu import ConlluError, Sentence, control_character


def tokenized_sentences(lines: Iterable[str], source: str) -> Iterator[Sentence]:
    """One sentence per non-blank line, as the lines are read; a sentence's
    ``line`` is its line number."""
    count = 0
    for number, line in enumerate(lines, start=1):
        tokens = line.split()
        if tokens:
            count += 1
            yield _sentence(tokens, count, source, number)


def _sentence(tokens: list[str], sent_id: int, source: str, line: int) -> Sentence:
    for index, form in enumerate(tokens, start=1):
        control = control_character(form)
        if control:
            raise ConlluError(source, line, f"token {index} holds the control character {control} "
                                            f"(not allowed in CoNLL-U)")
    rows = [f"# sent_id = {sent_id}", f"# text = {' '.join(tokens)}"]
    rows += [f"{index}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_" for index, form in enumerate(tokens, start=1)]
    return Sentence(rows, source, line, require_tree=False)
