"""Parsing a Ray Dataset (:meth:`Parser.parse_dataset
<kgparser.inference.parser.Parser.parse_dataset>`), for users already in Ray:
``map_batches`` with a pool of actors, each building the model once from
its data in Ray's object store (as :mod:`kgparser.inference.ray_engine`'s
actors do), turns rows of text into rows of parsed sentences.  Each batch of
rows is read through the one reader (:class:`~kgparser.io.reader.Input`,
one row at a time) and parsed as a chunk (:func:`~kgparser.inference.corpus.parse_chunk`)."""
from __future__ import annotations

import io
from typing import Any, Iterator

from ..errors import KgparserError
from ..io.reader import Input, RawTokenizer, check_input_format
from .corpus import ParseFunction, _Warnings, parse_chunk
from .ray_engine import import_ray, resources
from .workers import _build_model, model_bytes

#: what a Dataset's rows may become (:func:`parse_dataset`): a CoNLL-U string or a record per sentence
DATASET_OUTPUTS = ("conllu", "records")
#: rows of a Dataset each actor is given at a time (:func:`parse_dataset`)
DATASET_ROWS_PER_BATCH = 256


def parse_dataset(dataset: Any, model: Any, parse: ParseFunction, *, input_format: str = "text",
                  column: str = "text", output: str = "conllu", processes: int = 1, device: str | None = None,
                  raw: RawTokenizer | None = None, rows_per_batch: int = DATASET_ROWS_PER_BATCH) -> Any:
    """The Ray Dataset of the parsed sentences of ``dataset``'s rows, one row per
    sentence, parsed by a pool of ``processes`` actors with ``model`` on
    ``device`` (default: where the model is) running ``parse`` (the parse
    sequence with the caller's options), ``rows_per_batch`` rows at a time.

    Each row's ``column`` holds, in ``input_format``: ``text``, pre-tokenized
    text (a sentence per line); ``raw``, running text (``raw`` tokenizes it);
    ``conllu``, CoNLL-U text; in any format, a list of forms or ``(form, upos)``
    pairs is one sentence.  A
    row gives as many output rows as it has sentences (a row of raw text, one
    per sentence found), each with the row's other columns and, as ``output``
    says, ``conllu``: the sentence's CoNLL-U (a string ending with a blank line),
    or ``sentence``: a record (``sent_id``, ``text``, ``form``, ``lemma``,
    ``upos``, ``xpos``, ``feats``, ``head``, ``deprel``, one entry per word
    in the lists).  Like any Ray Dataset it is lazy (parsed when read) and keeps
    the rows' order only with ``DataContext.get_current().execution_options.preserve_order = True``."""
    ray = import_ray("parse_dataset")
    try:
        import ray.data
    except ImportError:
        raise KgparserError("parse_dataset needs Ray Data: pip install 'kgparser[ray]'") from None
    if output not in DATASET_OUTPUTS:
        raise KgparserError(f"output: expected one of {', '.join(DATASET_OUTPUTS)}, got {output!r}")
    if processes < 1 or rows_per_batch < 1:
        raise KgparserError(f"processes and rows_per_batch: must be >= 1, got {processes} and {rows_per_batch}")
    check_input_format(input_format)
    device = device or str(next(model.network.parameters()).device)
    reference = ray.put(model_bytes(model))  # the Dataset's plan holds it (and so keeps it) until it is read
    rows = _DatasetRows(input_format, column, output, raw)
    return dataset.map_batches(_DatasetActor, fn_constructor_args=([reference], device, parse, rows),
                               batch_size=rows_per_batch, batch_format="pyarrow",
                               compute=ray.data.ActorPoolStrategy(size=processes), **resources(device))


class _DatasetRows:
    """How a Dataset's rows are read and written (see :func:`parse_dataset`)."""

    def __init__(self, input_format: str, column: str, output: str, raw: RawTokenizer | None) -> None:
        self.input_format, self.column, self.output, self.raw = input_format, column, output, raw

    def sentences(self, value: Any) -> Iterator:
        """The sentences of one row's ``column``, through the one reader."""
        if not isinstance(value, str):  # a list of tokens, whatever the format: a sentence
            return Input([value], "conllu").items()
        data = value if self.input_format == "raw" else io.StringIO(value)
        return Input(data, self.input_format, raw=self.raw).items()

    def written(self, batch: Any, rows: list[int], sentences: list) -> Any:
        """The rows of the ``sentences`` parsed, each with the other columns of row ``rows[i]`` of ``batch``."""
        import pyarrow as pa

        name = "conllu" if self.output == "conllu" else "sentence"
        if self.output == "conllu":
            parsed = pa.array([s.to_conllu() for s in sentences], type=pa.string())
        else:
            parsed = pa.array([_record(s) for s in sentences], type=_record_type())
        others = [column for column in batch.column_names if column not in (self.column, name)]
        if not others:  # a table of no columns has no rows to take
            return pa.table({name: parsed})
        return batch.select(others).take(pa.array(rows, type=pa.int64())).append_column(name, parsed)


def _record(sentence: Any) -> dict[str, Any]:
    return {"sent_id": sentence.sent_id, "text": sentence.text, "form": sentence.forms, "lemma": sentence.lemmas,
            "upos": sentence.upos, "xpos": sentence.xpos, "feats": sentence.feats, "head": sentence.heads[1:],
            "deprel": sentence.deprels[1:]}


def _record_type() -> Any:
    import pyarrow as pa

    words = pa.list_(pa.string())
    return pa.struct([("sent_id", pa.string()), ("text", pa.string()), ("form", words), ("lemma", words),
                      ("upos", words), ("xpos", words), ("feats", words), ("head", pa.list_(pa.int64())),
                      ("deprel", words)])


class _DatasetActor:
    """An actor of :func:`parse_dataset`'s pool: the model built once, then
    each batch of rows (an Arrow table) parsed into the rows of its sentences."""

    def __init__(self, model: list, device: str, parse: ParseFunction, rows: _DatasetRows) -> None:
        import ray

        self.model = _build_model(ray.get(model[0]), device)
        self.parse, self.rows = parse, rows
        self.shown = _Warnings()

    def __call__(self, batch: Any) -> Any:
        owners: list[int] = []
        sentences: list = []
        for row, value in enumerate(batch.column(self.rows.column).to_pylist()):
            for sentence in self.rows.sentences(value):
                owners.append(row)
                sentences.append(sentence)
        parsed = parse_chunk(self.model, sentences, parse=self.parse, as_text=False)
        self.shown.show(parsed.warnings)
        return self.rows.written(batch, owners, sentences)
