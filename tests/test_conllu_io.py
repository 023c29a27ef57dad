"""CoNLL-U reading, validation, tree replacement and byte-exact writing."""
from __future__ import annotations

import gzip
import io
import logging
from pathlib import Path

import pytest

from kgparser.errors import KgparserError
from kgparser.io.conllu import (
    ConlluError,
    TokenError,
    find_cycle,
    iter_conllu,
    parse_conllu,
    read_conllu,
    sample_data_path,
    sentences_from_tokens,
    write_conllu,
)

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

DATA = Path(__file__).parent / "data"
UD = Path(__file__).resolve().parents[2] / "shared" / "ud"


def read_bytes_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def word(i, form="w", head="0", deprel="root", upos="X", misc="_"):
    return f"{i}\t{form}\t{form}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t{misc}"


# --- reading ------------------------------------------------------------------

def test_sample_fixture_fields():
    s1, s2, s3 = read_conllu(DATA / "sample.conllu")
    assert s1.n == 6 and s1.forms == ["Vamos", "nos", "a", "el", "mar", "."]
    assert s1.lemmas[0] == "ir" and s1.upos[4] == "NOUN" and s1.xpos[4] is None
    assert s1.heads == [-1, 0, 1, 5, 5, 1, 1]
    assert s1.deprels == [None, "root", "obj", "case", "det", "obl:arg", "punct"]
    assert s1.multiword_tokens == [(1, 2, "Vámonos"), (3, 4, "al")]
    assert s1.sent_id == "s1" and s1.text == "Vámonos al mar."
    assert s1.metadata["newdoc id"] == "doc1"
    assert s1.source == str(DATA / "sample.conllu") and s1.line == 1
    assert s1.misc[4] == {"SpaceAfter": "No"} and s1.misc[0] is None
    assert s2.line == 13 and s2.n == 6  # the empty node 5.1 is not a word
    assert s2.heads == [-1, 2, 0, 2, 5, 3, 5]
    assert s2.misc[5] == {"Translit": "tea", "Gloss": "thé"}
    assert s3.forms[0] == "New York"  # spaces inside FORM are kept
    assert len(s3.comments) == 2


def test_text_falls_back_to_forms():
    (sentence,) = parse_conllu(word(1, "Hi") + "\n" + word(2, "there", "1", "dep") + "\n")
    assert sentence.text == "Hi there" and sentence.sent_id is None


def test_round_trip_fixture_is_byte_identical(tmp_path):
    path = DATA / "sample.conllu"
    sentences = read_conllu(path)
    assert "".join(s.to_conllu() for s in sentences) == read_bytes_text(path)
    out = tmp_path / "out.conllu"
    write_conllu(sentences, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_sample_data_round_trips(split, tmp_path):
    path = sample_data_path(split)
    sentences = read_conllu(path)
    assert len(sentences) == {"train": 2000, "dev": 300, "test": 300}[split]
    out = tmp_path / "out.conllu"
    write_conllu(sentences, out)
    assert out.read_bytes() == path.read_bytes()


def test_fields_agree_with_the_conllu_package():
    import conllu

    path = sample_data_path("dev")
    ours = read_conllu(path)
    with open(path, encoding="utf-8") as handle:
        theirs = list(conllu.parse_incr(handle))
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs):
        words = [token for token in other if isinstance(token["id"], int)]
        assert mine.forms == [t["form"] for t in words]
        assert mine.upos == [t["upos"] for t in words]
        assert mine.heads[1:] == [t["head"] for t in words]
        assert mine.deprels[1:] == [t["deprel"] for t in words]
        assert mine.misc == [t["misc"] for t in words]
        assert mine.metadata == dict(other.metadata)


def test_sample_data_has_license_and_readme():
    folder = sample_data_path().parent
    assert "Attribution-ShareAlike 4.0" in (folder / "LICENSE.txt").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in (folder / "README.md").read_text(encoding="utf-8")
    with pytest.raises(KgparserError, match="unknown sample split"):
        sample_data_path("validation")


def test_gzip_and_stdin(tmp_path, monkeypatch):
    raw = (DATA / "sample.conllu").read_bytes()
    gz = tmp_path / "sample.conllu.gz"
    gz.write_bytes(gzip.compress(raw))
    assert [s.forms for s in read_conllu(gz)] == [s.forms for s in read_conllu(DATA / "sample.conllu")]
    out_gz = tmp_path / "out.conllu.gz"
    write_conllu(read_conllu(gz), out_gz)
    assert gzip.decompress(out_gz.read_bytes()) == raw

    class FakeStdin:
        buffer = io.BytesIO(raw)

    monkeypatch.setattr("sys.stdin", FakeStdin)
    sentences = read_conllu("-")
    assert len(sentences) == 3 and sentences[0].source == "<stdin>"


def test_iter_conllu_streams():
    stream = iter_conllu(DATA / "sample.conllu")
    assert next(stream).sent_id == "s1"
    assert [s.sent_id for s in stream] == ["s2", "s3"]


def test_unreadable_files_are_user_errors(tmp_path):
    with pytest.raises(KgparserError, match="nope.conllu: cannot open"):
        read_conllu(tmp_path / "nope.conllu")
    corrupt = tmp_path / "corrupt.conllu.gz"
    corrupt.write_bytes(b"not gzip at all")
    with pytest.raises(KgparserError, match="corrupt.conllu.gz: cannot read"):
        read_conllu(corrupt)


def test_file_without_final_blank_line_and_extra_blank_lines():
    text = "\n\n" + word(1) + "\n\n\n" + word(1, "x")
    sentences = parse_conllu(text)
    assert [s.line for s in sentences] == [3, 6]


def test_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.conllu"
    path.write_bytes(b"\xef\xbb\xbf# sent_id = b\n" + word(1).encode() + b"\n\n")
    (sentence,) = read_conllu(path)
    assert sentence.sent_id == "b" and sentence.to_conllu() == "# sent_id = b\n" + word(1) + "\n\n"


def test_crlf_line_ends_are_read_as_lf(tmp_path):
    """Written back, a CRLF file has LF line ends only: no line keeps its CR (issue 36)."""
    lines = ["# sent_id = c", "# text = w w", word(1, misc="SpaceAfter=No"), word(2, head="1", deprel="dep")]
    path = tmp_path / "crlf.conllu"
    path.write_bytes(("\r\n".join(lines) + "\r\n\r\n").encode())
    (sentence,) = read_conllu(path)
    assert sentence.misc == [{"SpaceAfter": "No"}, None] and sentence.sent_id == "c"
    assert sentence.to_conllu() == "\n".join(lines) + "\n\n"


# --- validation -----------------------------------------------------------------

MALFORMED = [
    # (lines, line number of the error, reason fragment)
    (["# c", "1\tw\tw\tX\t_\t_\t0\troot\t_"], 2, "expected 10 TAB-separated columns, found 9"),
    (["1 w w X _ _ 0 root _ _"], 1, "found 1"),
    ([word(1), "2\t\tw\tX\t_\t_\t1\tdep\t_\t_"], 2, "empty FORM column"),
    ([word(1, head="x")], 1, "HEAD 'x' is not a non-negative integer"),
    ([word(1, head="-1")], 1, "HEAD '-1' is not"),
    ([word(1), word(2, head="3", deprel="dep")], 2, "HEAD 3 out of range 0..2"),
    ([word(1), word(2, head="2", deprel="dep")], 2, "word 2 is its own head"),
    ([word(1), word(1, head="1")], 2, "duplicate or decreasing word ID 1, expected 2"),
    ([word(1), word(3, head="1")], 2, "word ID 3 skips ahead, expected 2"),
    ([word(2)], 1, "word ID 2 skips ahead, expected 1"),
    (["a\tw\tw\tX\t_\t_\t0\troot\t_\t_"], 1, "malformed ID 'a'"),
    (["01\tw\tw\tX\t_\t_\t0\troot\t_\t_"], 1, "malformed ID '01'"),
    (["2-1\tww\t_\t_\t_\t_\t_\t_\t_\t_", word(1)], 1, "malformed multiword token range '2-1'"),
    (["1-1\tww\t_\t_\t_\t_\t_\t_\t_\t_", word(1)], 1, "malformed multiword token range"),
    ([word(1), "1-2\tww\t_\t_\t_\t_\t_\t_\t_\t_", word(2, head="1")], 2, "must start at the next word ID 2"),
    (["1-2\tww\t_\t_\t_\t_\t_\t_\t_\t_", "1-3\tww\t_\t_\t_\t_\t_\t_\t_\t_", word(1)], 2, "overlaps"),
    ([word(1), "2-3\tww\t_\t_\t_\t_\t_\t_\t_\t_", word(2, head="1")], 2, "extends past the last word 2"),
    ([word(1), "1.2\te\t_\t_\t_\t_\t_\t_\t_\t_"], 2, "empty node 1.2 out of sequence, expected 1.1"),
    ([word(1), "2.1\te\t_\t_\t_\t_\t_\t_\t_\t_"], 2, "empty node 2.1 out of sequence"),
    ([word(1), "1.0\te\t_\t_\t_\t_\t_\t_\t_\t_"], 2, "malformed empty node ID '1.0'"),
    ([word(1, head="2", deprel="dep"), word(2, head="3", deprel="dep"), word(3, head="1", deprel="dep")],
     1, "no word is attached to the root 0: cycle 1 -> 2 -> 3 -> 1"),
    ([word(1), word(2, head="3", deprel="dep"), word(3, head="2", deprel="dep")], 2, "cycle in the tree: 2 -> 3 -> 2"),
    ([word(1, head="_", deprel="_")], 1, "HEAD is '_' (a tree is required)"),
    ([word(1, deprel="_")], 1, "DEPREL is '_'"),
    (["# only a comment", "# another"], 1, "sentence has no words"),
    (["1-2\tww\t_\t_\t_\t_\t_\t_\t_\t_"], 1, "sentence has no words"),
    ([word(1, form="w\x00")], 1, "FORM holds the control character U+0000 (not allowed in CoNLL-U)"),
    ([word(1), word(2, head="1", deprel="dep", misc="a\rb")], 2, "MISC holds the control character U+000D"),
    ([word(1, upos="X\x0c")], 1, "UPOS holds the control character U+000C"),
    ([word(1, form="a\u2028b")], 1, "FORM holds the control character U+2028"),
    ([word(1), word(2, head="1", deprel="dep", upos="DET x")], 2,
     "UPOS 'DET x' holds white space (CoNLL-U allows it in FORM, LEMMA and MISC only)"),
    (["1\tw\tw\tX\tN\u00a01\t_\t0\troot\t_\t_"], 1, "XPOS 'N\\xa01' holds white space"),
    (["1\tw\tw\tX\t_\tNumber=Sing |Case=Nom\t0\troot\t_\t_"], 1, "FEATS 'Number=Sing |Case=Nom' holds white"),
    ([word(1, deprel="root\u3000")], 1, "DEPREL 'root\\u3000' holds white space"),
    (["1\tw\tw\tX\t_\t_\t0\troot\t0:root 1:x\t_"], 1, "DEPS '0:root 1:x' holds white space"),
]


@pytest.mark.parametrize("lines, line, reason", MALFORMED)
def test_malformed_sentences_name_file_line_and_reason(lines, line, reason):
    text = "# sent_id = fine\n" + word(1) + "\n\n" + "\n".join(lines) + "\n\n"
    with pytest.raises(ConlluError) as info:
        parse_conllu(text, source="bad.conllu")
    error = info.value
    assert (error.source, error.line) == ("bad.conllu", line + 3)
    assert reason in error.reason
    assert str(error).startswith(f"bad.conllu:{line + 3}: ")
    assert isinstance(error, KgparserError)


def test_error_in_a_file_names_path_and_line():
    path = DATA / "malformed_head_range.conllu"
    with pytest.raises(ConlluError, match=rf"^{path}:7: HEAD 7 out of range 0\.\.2$"):
        read_conllu(path)


def test_no_root_is_reported_only_for_complete_trees():
    two_cycle = word(1, head="2", deprel="dep") + "\n" + word(2, head="1", deprel="dep") + "\n"
    with pytest.raises(ConlluError, match="no word is attached to the root 0: cycle 1 -> 2 -> 1"):
        parse_conllu(two_cycle, require_tree=False)
    (partial,) = parse_conllu(word(1, head="_", deprel="_") + "\n", require_tree=False)
    assert partial.heads == [-1, -1]
    headless_and_cycle = [word(1, head="_", deprel="_"), word(2, head="3", deprel="dep"),
                          word(3, head="2", deprel="dep")]
    with pytest.raises(ConlluError, match="cycle in the tree: 2 -> 3 -> 2"):
        parse_conllu("\n".join(headless_and_cycle) + "\n", require_tree=False)


def test_parser_input_may_lack_heads_but_not_structure():
    (sentence,) = read_conllu(DATA / "unparsed.conllu", require_tree=False)
    assert sentence.heads == [-1, 2, -1] and sentence.deprels == [None, "nsubj", None]
    with pytest.raises(ConlluError, match="unparsed.conllu:3: HEAD is '_'"):
        read_conllu(DATA / "unparsed.conllu")
    with pytest.raises(ConlluError, match="skips ahead"):
        parse_conllu(word(1, head="_") + "\n" + word(3, head="_") + "\n", require_tree=False)


def test_multiple_root_children_are_accepted():
    (sentence,) = parse_conllu(word(1) + "\n" + word(2) + "\n")
    assert sentence.heads == [-1, 0, 0]


def test_lenient_skips_and_counts_bad_sentences(caplog):
    path = DATA / "mixed_valid_invalid.conllu"
    with pytest.raises(ConlluError, match=":5: expected 10"):
        read_conllu(path)
    with caplog.at_level(logging.WARNING, logger="kgparser.io.conllu"):
        sentences = read_conllu(path, lenient=True)
    assert [s.sent_id for s in sentences] == ["ok1", "ok2", "ok3"]
    assert sentences.n_skipped == 2
    assert [(e.line, e.reason.split(":")[0]) for e in sentences.skipped] == [
        (5, "expected 10 TAB-separated columns, found 9"), (12, "cycle in the tree")]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and f"{path}:5:" in warnings[0] and f"{path}:12:" in warnings[1]


def test_white_space_is_kept_where_conllu_allows_it_and_skipped_by_a_lenient_read():
    spaced = "1\tNew York\tNew York\tPROPN\t_\t_\t0\troot\t_\tGloss=new city|Note=a\u00a0b"
    text = word(1, upos="DET x") + "\n\n" + spaced + "\n\n"
    (sentence,) = sentences = parse_conllu(text, lenient=True)
    assert sentence.forms == ["New York"] and sentence.misc == [{"Gloss": "new city", "Note": "a\u00a0b"}]
    assert [(e.line, e.reason) for e in sentences.skipped] == [
        (1, "UPOS 'DET x' holds white space (CoNLL-U allows it in FORM, LEMMA and MISC only)")]
    sentence.set_tags({"upos": ["NOUN"]})
    assert sentence.to_conllu() == spaced.replace("PROPN", "NOUN") + "\n\n"


def test_invalid_utf8_is_a_user_error(tmp_path):
    path = tmp_path / "latin1.conllu"
    path.write_bytes(word(1, "caf\xe9").encode("latin-1") + b"\n")
    with pytest.raises(KgparserError, match="not valid UTF-8"):
        read_conllu(path)


def test_find_cycle():
    assert find_cycle([-1, 0, 1, 2]) is None
    assert find_cycle([-1, -1, 3, 2]) == [2, 3]
    assert find_cycle([-1, 2, 1, 0]) == [1, 2]


# --- writing trees ----------------------------------------------------------------

def test_set_tree_changes_only_head_and_deprel():
    original = read_conllu(DATA / "sample.conllu")
    sentences = [s.copy() for s in original]
    s1, s2 = sentences[0], sentences[1]
    s1.set_tree([-1, 0, 1, 1, 3, 1, 5], [None, "root", "obj", "nmod", None, "obl", "punct"])
    assert s1.heads == [-1, 0, 1, 1, 3, 1, 5]
    assert s1.deprels == [None, "root", "obj", "nmod", "dep", "obl", "punct"]
    s2.set_tree([-1, 2, 0, 2, 5, 3, -1], None)
    assert s2.deprels[6] is None and s2.heads[6] == -1 and s2.deprels[1] == "dep"

    reread = parse_conllu("".join(s.to_conllu() for s in sentences), require_tree=False)
    assert reread[0].heads == s1.heads and reread[0].deprels == s1.deprels
    assert reread[1].heads == s2.heads and reread[1].deprels == s2.deprels
    for new, old in zip(sentences, original):
        new_lines, old_lines = new.to_conllu().split("\n"), old.to_conllu().split("\n")
        assert len(new_lines) == len(old_lines)
        for a, b in zip(new_lines, old_lines):
            a_cols, b_cols = a.split("\t"), b.split("\t")
            assert a_cols[:6] + a_cols[8:] == b_cols[:6] + b_cols[8:]
            if "-" in b_cols[0] or "." in b_cols[0] or b.startswith("#"):
                assert a == b  # multiword tokens, empty nodes, comments untouched
    # the originals are untouched by set_tree on copies
    assert "".join(s.to_conllu() for s in original) == read_bytes_text(DATA / "sample.conllu")


@pytest.mark.parametrize("heads, deprels, message", [
    ([-1, 0], None, "heads has length 2"),
    ([-1, 0, 1, 9, 3, 1, 5], None, "head 9"),
    ([-1, 0, 2, 1, 3, 1, 5], None, "word 2: head 2"),
    ([-1, 0, 1, 1, 3, 1, 5], [None, "root"], "deprels has length 2"),
    ([-1, 0, 1, 1, 3, 1, 5], [None, "root", "a b", "x", "x", "x", "x"], "whitespace"),
])
def test_set_tree_rejects_bad_input(heads, deprels, message):
    sentence = read_conllu(DATA / "sample.conllu")[0]
    before = sentence.to_conllu()
    with pytest.raises(ValueError, match=message):
        sentence.set_tree(heads, deprels)
    assert sentence.to_conllu() == before


def test_sentences_from_tokens():
    plain, tagged = sentences_from_tokens([["Hello", "New York"], [("Hi", "INTJ"), ("!", "PUNCT")]])
    assert plain.n == 2 and plain.forms == ["Hello", "New York"] and plain.upos == [None, None]
    assert plain.heads == [-1, -1, -1] and plain.text == "Hello New York"
    assert tagged.upos == ["INTJ", "PUNCT"] and tagged.source == "<tokens>" and tagged.line == 2
    tagged.set_tree([-1, 0, 1], [None, "root", "punct"])
    (reread,) = parse_conllu(tagged.to_conllu())
    assert reread.heads == [-1, 0, 1] and reread.upos == ["INTJ", "PUNCT"]
    with pytest.raises(ConlluError, match="<tokens>:1: sentence has no words"):
        sentences_from_tokens([[]])
    with pytest.raises(TypeError, match="sentence 1: expected a list of tokens"):
        sentences_from_tokens(["Hello world"])
    (untagged,) = sentences_from_tokens([[("Hi", None)]])
    assert untagged.upos == [None]


@pytest.mark.parametrize("tokens, message", [
    ([["ok"], ["a\tb"]], "sentence 2, token 1: form 'a\\tb' contains a TAB"),
    ([["ok", ("b", "")]], "sentence 1, token 2: UPOS '' is empty"),
    ([["a\x00b"]], "sentence 1, token 1: form 'a\\x00b' contains the control character U+0000"),
    ([["New York", ("x", "DET x")]], "sentence 1, token 2: UPOS 'DET x' contains white space"),
    ([["The", 5]], "sentence 1, token 2: expected a form or a (form, upos) pair of strings, got 5 (int)"),
    ([[b"The"]], "sentence 1, token 1: expected a form or a (form, upos) pair of strings, got b'The' (bytes)"),
    ([[("a", "B", "c", "d")]], "sentence 1, token 1: expected a form or a (form, upos) pair of strings, "
                               "got ('a', 'B', 'c', 'd') (tuple)"),
    ([[("a", 5)]], "sentence 1, token 1: expected a form or a (form, upos) pair of strings, got ('a', 5) (tuple)"),
    ([["a"], None], "sentence 2: expected a list of tokens, got None (NoneType)"),
])
def test_tokens_that_cannot_be_conllu_are_value_errors_naming_their_place(tokens, message):
    with pytest.raises(TokenError) as refused:
        sentences_from_tokens(tokens)
    assert str(refused.value) == message and isinstance(refused.value, (ValueError, KgparserError))


def test_write_to_open_file_and_stdout(capsys):
    sentences = read_conllu(DATA / "sample.conllu")
    buffer = io.StringIO()
    write_conllu(sentences, buffer)
    assert buffer.getvalue() == read_bytes_text(DATA / "sample.conllu")
    write_conllu(sentences[:1], "-")
    assert capsys.readouterr().out == sentences[0].to_conllu()


# --- every shipped treebank ---------------------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.slow
@pytest.mark.skipif(not UD.is_dir(), reason="../shared/ud treebanks not available")
def test_every_ud_treebank_reads_and_round_trips():
    files = sorted(UD.glob("*/*.conllu"))
    assert files
    for path in files:
        sentences = read_conllu(path)
        assert sentences and not sentences.skipped
        assert "".join(s.to_conllu() for s in sentences) == read_bytes_text(path), path
