"""Fuzzing the readers of user files: CoNLL-U, YAML configs, constraint side files.

Whatever the input, a reader returns a result or raises a KgparserError whose
one-line message names the source (the file, ``<string>`` or the ``--set``
override); never another exception.  Runs are derandomized and database-free,
so CI sees the same examples every time.
"""
from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kgparser.config import ConfigError, load_config
from kgparser.constraints import ConstraintError, constrain, constraints_for, read_constraints_jsonl
from kgparser.errors import KgparserError
from kgparser.io.conllu import ConlluError, parse_conllu, read_conllu
from kgparser.transitions import get_system

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None)
QUICKSTART = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def outcome(read, source: str, *args, **kwargs):
    """``read(*args, **kwargs)``, or None after checking the KgparserError it raised."""
    try:
        return read(*args, **kwargs)
    except KgparserError as error:
        assert_names(error, source)
        return None


def assert_names(error: KgparserError, *sources: str) -> None:
    message = str(error)
    assert any(source in message for source in sources), message
    assert "\n" not in message, message


# --- CoNLL-U -------------------------------------------------------------------

#: field values a broken file may hold where a number, a label or a form belongs
ODD_FIELDS = ["", "_", "0", "-1", "00", "01", "9" * 20, "9" * 5000, "1-2", "2-1", "1-", "-", "1.1", "0.1", "1.0",
              ".", "1..2", "\t", " ", "\r", "\ufeff1", "٣", "²", "1e3", "x", "Ünï", "a b", "=", "a=b|c", "#"]
LINE_EDITS = ["", "# sent_id = s", "# text = x y", "#", "\r", "\ufeff", " \t ",
              "1-2\tab" + "\t_" * 8, "1.1\te" + "\t_" * 8, "0.1\te" + "\t_" * 8]


@st.composite
def near_valid_conllu(draw) -> str:
    """Sentences of valid lines with some fields, columns and lines mutated."""
    blocks = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 5))
        rows = [[str(i), f"w{i}", "_", "X", "_", "_", str(i - 1), "dep", "_", "_"] for i in range(1, n + 1)]
        for _ in range(draw(st.integers(0, 3))):
            row = draw(st.sampled_from(rows))
            row[draw(st.integers(0, 9))] = draw(st.sampled_from(ODD_FIELDS) | st.text(max_size=5))
        lines = ["\t".join((row + ["_"])[:draw(st.integers(8, 11))] if draw(st.booleans()) else row) for row in rows]
        for _ in range(draw(st.integers(0, 2))):
            lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(LINE_EDITS)))
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks) + "\n"
    return draw(st.sampled_from(["", "\ufeff"])) + (text.replace("\n", "\r\n") if draw(st.booleans()) else text)


CONLLU_ALPHABET = st.sampled_from(list("\t\t\t\n\n\r0123456789-._#=| _") + ["\ufeff", "é", "\x85", "\u2028"])
ANY_CONLLU_TEXT = st.text(CONLLU_ALPHABET | st.characters(), max_size=300)
READ_MODES = st.tuples(st.booleans(), st.booleans())


def check_sentences(result, source: str) -> None:
    """What a reader gives back is consistent and survives writing and reading again."""
    for error in result.skipped:
        assert isinstance(error, ConlluError)
        assert_names(error, source)
    for sentence in result:
        assert len(sentence.heads) == len(sentence.deprels) == sentence.n + 1 == len(sentence.forms) + 1
        assert all(-1 <= head <= sentence.n for head in sentence.heads)
        assert len(sentence.misc) == sentence.n
        assert isinstance(sentence.metadata, dict) and isinstance(sentence.text, str)
        assert all(1 <= first < last for first, last, _ in sentence.multiword_tokens)
        again, = parse_conllu(sentence.to_conllu(), require_tree=False)
        assert again.heads == sentence.heads and again.forms == sentence.forms


def blocks(text: str) -> int:
    """The number of blank-line separated blocks of ``text`` (after a BOM)."""
    count, inside = 0, False
    for line in text.removeprefix("\ufeff").split("\n"):
        count += bool(line.strip()) and not inside
        inside = bool(line.strip())
    return count


@pytest.mark.exhaustive
@FUZZ
@given(text=ANY_CONLLU_TEXT | near_valid_conllu(), modes=READ_MODES)
def test_parse_conllu_reads_or_names_the_source(text, modes):
    lenient, require_tree = modes
    result = outcome(parse_conllu, "<string>", text, lenient=lenient, require_tree=require_tree)
    if result is not None:
        check_sentences(result, "<string>")
    if lenient:  # every block is a sentence or a skipped error, never lost
        assert len(result) + result.n_skipped == blocks(text)


def test_parse_conllu_skips_a_leading_byte_order_mark_as_read_conllu_does():
    sentence, = parse_conllu("\ufeff1\tw\t_\tX\t_\t_\t0\troot\t_\t_\n")
    assert sentence.forms == ["w"]


def encodings(text: str) -> st.SearchStrategy[bytes]:
    """``text`` in UTF-8 (most often), with a BOM or CRLF line ends, or broken: cut short, odd bytes in it."""
    data = text.encode("utf-8", "surrogatepass")
    return st.sampled_from([data, data, data, b"\xef\xbb\xbf" + data, data.replace(b"\n", b"\r\n"), data[:-1],
                            b"\xff" + data, data.replace(b" ", b"\xc3", 1), data.replace(b"\n", b"\n\xe9", 1)])


def stored(data: bytes, packing: str) -> bytes:
    """``data`` as a plain file, gzipped, gzipped and cut short, or not gzipped at all."""
    if packing == "plain" or packing == "not-gzip":
        return data
    packed = gzip.compress(data)
    return packed if packing == "gzip" else packed[:len(packed) // 2]


@FUZZ
@given(data=st.one_of(near_valid_conllu(), ANY_CONLLU_TEXT).flatmap(encodings) | st.binary(max_size=200),
       modes=READ_MODES, packing=st.sampled_from(["plain", "gzip", "cut-gzip", "not-gzip"]))
def test_read_conllu_reads_or_names_the_file(folder, data, modes, packing):
    path = folder / ("fuzz.conllu" if packing == "plain" else "fuzz.conllu.gz")
    path.write_bytes(stored(data, packing))
    lenient, require_tree = modes
    result = outcome(read_conllu, str(path), path, lenient=lenient, require_tree=require_tree)
    if result is not None:
        check_sentences(result, str(path))


# --- YAML configs --------------------------------------------------------------

YAML_SNIPPETS = ["1e-4", "1E4", ".5", "-.inf", ".nan", "0x" + "f" * 30, "1" * 5000, "0b_", "2001-02-30", "!!int x",
                 "!!bool x", "!!timestamp x", "!!binary x", "!!python/object:os.system x", "&a [*a]", "*a", "~",
                 "true", "no", '"a\\0b"', '"\\ud800"', "[1, [2]]", "{a: 1}", "'x", "{", "- 1", "<<: *a", "? a"]
CONFIG_KEYS = ["output_dir", "seed", "device", "threads", "data", "data.train", "data.lenient",
               "data.max_train_sentences", "system", "system.name", "system.options", "system.options.root",
               "system.options.regularize_switch", "model.word_dim", "model.pos", "model.pos_dropout",
               "model.pretrained", "model.pretrained.path", "training", "training.lr", "training.epochs",
               "training.oracle", "training.clip", "training.ema_decay", "training.nope", "a.b.c"]


def pieces(tokens: list[str], max_size: int) -> st.SearchStrategy[str]:
    """Text made of ``tokens`` and arbitrary characters."""
    return st.lists(st.sampled_from(tokens) | st.characters(), max_size=max_size).map("".join)


YAML_TEXT = pieces(list(":-[]{}#&*!|>'\"%@`,? \n\n  \t.e0123456789_") + ["lr", "seed", "training", ": "], 80)
YAML_VALUES = st.sampled_from(YAML_SNIPPETS) | pieces(list(":-[]{}'\". e0123456789_"), 20)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                       max_size=3), max_leaves=8)


@st.composite
def mutated_quickstart(draw) -> str:
    """configs/quickstart.yaml with a key set to an odd value, or its text cut and spliced."""
    text = QUICKSTART.read_text(encoding="utf-8")
    if draw(st.booleans()):
        raw = yaml.safe_load(text)
        node, *path = raw, *draw(st.sampled_from(CONFIG_KEYS)).split(".")
        for part in path[:-1]:
            node = node[part] if isinstance(node.get(part), dict) else node.setdefault(part, {})
        node[path[-1]] = draw(JSON_VALUES)
        return yaml.safe_dump(raw, allow_unicode=draw(st.booleans()))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 40)))
    return text[:start] + draw(YAML_VALUES) + text[end:]


@pytest.mark.exhaustive
@FUZZ
@given(data=(YAML_TEXT | mutated_quickstart()).flatmap(encodings))
def test_load_config_reads_or_names_the_file(folder, data):
    path = folder / "fuzz.yaml"
    path.write_bytes(data)
    outcome(load_config, str(path), path)


@FUZZ
@pytest.mark.exhaustive
@given(overrides=st.lists(st.builds("{}={}".format, st.sampled_from(CONFIG_KEYS), YAML_VALUES)
                          | YAML_VALUES, max_size=3))
def test_overrides_apply_or_name_the_file_or_the_override(overrides):
    try:
        load_config(QUICKSTART, overrides)
    except ConfigError as error:
        assert_names(error, str(QUICKSTART), "--set ")


# --- constraint side files -----------------------------------------------------

WORD = st.integers(0, 4)
SENT_IDS = st.sampled_from(["s1", "s3", "s5", "zz"])
INDICES = st.integers(0, 5)
NAMES = (st.builds(lambda sent_id: {"sent_id": sent_id}, SENT_IDS) | st.builds(lambda i: {"index": i}, INDICES)
         | st.builds(lambda sent_id, i: {"sent_id": sent_id, "index": i}, SENT_IDS, INDICES))
RECORDS = st.builds(lambda name, rest: {**name, **rest}, NAMES, st.fixed_dictionaries({}, optional={
    "arcs": st.lists(st.tuples(WORD, WORD) | st.tuples(WORD, WORD, st.sampled_from(["nsubj", "root"])), max_size=3),
    "spans": st.lists(st.tuples(WORD, WORD) | st.tuples(WORD, WORD, st.sampled_from(["free", "root", "none"])),
                      max_size=2)}))
ODD_JSON = [None, True, -1, 2 ** 70, 1.5, float("nan"), "", "s1", [], [[]], [[1]], [[1, 2, 3, 4]], [["1", 2]], {}]


@st.composite
def mutated_record(draw) -> dict:
    record = draw(RECORDS)
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(["sent_id", "index", "arcs", "spans", "other"]))
        if draw(st.booleans()):
            record[key] = draw(st.sampled_from(ODD_JSON) | JSON_VALUES)
        else:
            record.pop(key, None)
    return record


ODD_LINES = ['{"index": ' + "1" * 5000 + "}", "[" * 5000, '{"index": 0}\r', "\ufeff{}", '{"sent_id": "\\ud800"}']
ODD_LINE = (mutated_record().map(json.dumps) | JSON_VALUES.map(json.dumps) | st.sampled_from(ODD_LINES)
            | pieces(list('{}[]":,0123456789-.e ') + ['"index"', '"sent_id"', '"arcs"', '"spans"'], 40))


@st.composite
def side_file(draw) -> str:
    """Records in JSON lines, and sometimes an odd line among them."""
    lines = [json.dumps(record) for record in draw(st.lists(RECORDS, max_size=3))]
    if draw(st.integers(0, 2)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(ODD_LINE))
    return "\n".join(lines)


SENTENCES = [("s1", 3), (None, 4), ("s3", 4), ("s1", 5), ("s5", 2)]  # (sent_id, words) at indices 0..4


@FUZZ
@given(data=side_file().flatmap(encodings))
def test_constraints_reader_reads_or_names_the_file(folder, data):
    path = folder / "fuzz.jsonl"
    path.write_bytes(data)
    table = outcome(read_constraints_jsonl, str(path), str(path))
    for index, (sent_id, n) in enumerate(SENTENCES if table is not None else ()):
        constraints = outcome(constraints_for, str(path), table, sent_id, index)
        for system in (get_system("arc-eager", root="end"), get_system("arc-hybrid")):
            try:
                constrain(system, constraints, n)
            except ConstraintError as error:
                assert_names(error, str(path))


@pytest.mark.parametrize("content, message", [
    (b"name: x\nbase: \xff\n", "line 2, column 7: grid file is not valid UTF-8"),
    (b"[" * 5000, "nested too deeply"),
])
@pytest.mark.exhaustive
def test_unreadable_grid_files_are_one_line_errors(tmp_path, content, message):
    from kgparser.experiments.grid import GridError, load_grid

    path = tmp_path / "grid.yaml"
    path.write_bytes(content)
    with pytest.raises(GridError, match=message):
        load_grid(path)
