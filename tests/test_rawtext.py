"""Raw text in (``--input-format raw``): the text rebuilt from the output is
the input, character for character; paragraphs, sentence ids and texts;
the model's language and ``--lang``; one-line errors."""
import io
import sys

import pytest
from rawtext_models import save_tiny_model
from test_model import IGNORE_TINY_MODEL_WARNINGS
from test_parser import assert_valid_tree

from kgparser.cli import main
from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path
from kgparser.io.rawtext import RawTextError, escape, paragraph_spans, text_of, unescape

pytestmark = IGNORE_TINY_MODEL_WARNINGS

TEXTS = [
    "Raw text. Two sentences.",
    "  Leading and trailing white space.  \n",
    "Odd   spacing,\tTABs\tand a\u00a0no-break space.\nA new line inside the paragraph!",
    "First paragraph. Still the first.\n\nSecond paragraph.\n \t\n\n\nThird, after blank lines.\n",
    "Windows line ends.\r\n\r\nA paragraph after them.\r\n",
    "Pipes | and back\\slashes \\s stay. Don't split? It's 5.3% at 9:00.",
    "One",
]


@pytest.fixture(scope="module")
def parser(tmp_path_factory):
    from kgparser.inference.parser import Parser

    pytest.importorskip("spacy")
    return Parser.load(save_tiny_model(tmp_path_factory.mktemp("raw") / "model.pt"))


@pytest.mark.parametrize("text", TEXTS)
def test_the_text_is_rebuilt_exactly_from_the_conllu(parser, text):
    sentences = parser.parse(text, input_format="raw")
    conllu = "".join(s.to_conllu() for s in sentences)
    reread = parse_conllu(conllu, require_tree=True)
    assert text_of(reread) == text
    for sentence in reread:
        assert_valid_tree(sentence)
        assert sentence.metadata["text"] == " ".join(sentence.metadata["text"].split())  # single spaces
        assert "\n" not in sentence.metadata["text"]


def test_paragraphs_sentence_ids_and_spacing(parser):
    sentences = parser.parse("Hello  world. Bye!\n\nNext one.", input_format="raw")
    assert [s.forms for s in sentences] == [["Hello", "world", "."], ["Bye", "!"], ["Next", "one", "."]]
    assert ["newpar" in s.metadata for s in sentences] == [True, False, True]
    assert [s.sent_id for s in sentences] == ["1", "2", "3"]
    assert sentences[0].metadata["text"] == "Hello world."
    assert [m or {} for m in sentences[0].misc] == [{"SpacesAfter": "\\s\\s"}, {"SpaceAfter": "No"}, {}]
    assert sentences[1].misc[-1] == {"SpacesAfter": "\\n\\n"}
    assert sentences[2].misc[-1] == {"SpaceAfter": "No"}


def test_escapes_round_trip():
    spaces = " \t\r\n|\\\u00a0\u2028\u3000"
    assert unescape(escape(spaces)) == spaces
    assert escape("\n\n") == "\\n\\n" and escape("\u00a0") == "\\u00A0"


def test_paragraphs_are_separated_by_lines_of_white_space_only():
    text = "a\nb\n  \nc\n\n\n d \n"
    assert [text[s:e] for s, e in paragraph_spans(text)] == ["a\nb", "c", "d"]
    assert paragraph_spans(" \n\t\n") == []


def test_a_treebank_text_is_its_tokens_and_paragraphs():
    treebank = read_conllu(sample_data_path("test"))
    text = text_of(treebank)
    assert any(s.multiword_tokens for s in treebank)
    assert text.startswith(treebank[0].metadata["text"] + " ")
    joined = " ".join(s.metadata["text"] for s in treebank)
    assert " ".join(text.split()) == " ".join(joined.split())


def test_language_from_the_model_and_lang_overrides(parser, monkeypatch):
    assert parser.lang == "en"
    blank = []
    import kgparser.tokenize.rules as rawtext

    original = rawtext.blank_pipeline
    monkeypatch.setattr(rawtext, "blank_pipeline", lambda lang: blank.append(lang) or original(lang))
    parser.parse("Egy mondat.", input_format="raw", lang="hu")
    parser.parse("One sentence.", input_format="raw")
    assert blank == ["hu", "en"]


def test_language_from_a_ud_file_name():
    from kgparser.config import config_from_dict
    from kgparser.tokenize.rules import model_language

    assert model_language(config_from_dict({"data": {"train": "x/hu_szeged-ud-train.conllu"}})) == "hu"
    assert model_language(config_from_dict({"data": {"train": "train.conllu", "lang": "tr"}})) == "tr"
    assert model_language(config_from_dict({"data": {"train": "train.conllu"}})) is None


def test_command_line_reads_standard_input(parser, tmp_path, monkeypatch, capsys):
    model = save_tiny_model(tmp_path / "model.pt")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Raw text. Two sentences.\n")))
    assert main(["parse", "--model", str(model), "--input-format", "raw", "-"]) == 0
    sentences = parse_conllu(capsys.readouterr().out)
    assert [s.metadata["text"] for s in sentences] == ["Raw text.", "Two sentences."]
    assert text_of(sentences) == "Raw text. Two sentences.\n"


def test_command_line_file_and_errors(parser, tmp_path, capsys):
    model = save_tiny_model(tmp_path / "model.pt")
    (tmp_path / "in.txt").write_text("A file. Of raw text.", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert main(["parse", "--model", str(model), "--input-format", "raw", str(tmp_path / "in.txt"),
                 "-o", str(out)]) == 0
    assert text_of(read_conllu(out)) == "A file. Of raw text."
    assert main(["parse", "--model", str(model), "--input-format", "raw", "--lang", "zz",
                 str(tmp_path / "in.txt")]) == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("kgparser parse: error: spaCy has no tokenizer for the language 'zz'")


def test_a_model_without_a_language_asks_for_one(parser):
    parser.model.config.data.lang, train = None, parser.model.config.data.train
    try:
        with pytest.raises(RawTextError, match="give one .--lang"):
            parser.parse("Text.", input_format="raw")
    finally:
        parser.model.config.data.lang = "en"
    assert train is None


def test_without_spacy_one_line_says_what_to_install(monkeypatch):
    import kgparser.tokenize.rules as rawtext

    monkeypatch.setitem(sys.modules, "spacy", None)
    rawtext.blank_pipeline.cache_clear()
    with pytest.raises(RawTextError, match=r"^raw text needs spaCy: pip install 'kgparser\[spacy\]'"):
        rawtext.raw_sentences("Text.", "en")
    rawtext.blank_pipeline.cache_clear()


LONG_PARAGRAPH = " ".join(f"Sentence number {i} has a few words, and a comma." for i in range(40))


def _conllu(sentences) -> str:
    return "".join(s.to_conllu() for s in sentences)


@pytest.mark.parametrize("window", [60, 150, 1000])
def test_long_paragraphs_read_in_windows_give_what_one_reading_gives(parser, monkeypatch, window):
    from kgparser.io import rawtext
    from kgparser.tokenize.rules import raw_sentences

    text = f"A short one.\n\n{LONG_PARAGRAPH}\n\nAnother short one. {LONG_PARAGRAPH}\n"
    whole = _conllu(raw_sentences(text, "en"))
    monkeypatch.setattr(rawtext, "WINDOW", window)
    assert _conllu(raw_sentences(text, "en")) == whole


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_text_fed_in_pieces_of_any_size_gives_the_same_sentences(monkeypatch, size):
    from kgparser.io import rawtext
    from kgparser.tokenize.rules import SpacyRules, raw_sentences

    pytest.importorskip("spacy")
    monkeypatch.setattr(rawtext, "WINDOW", 100)
    text = f"  First.\r\n \t\n\nSecond {LONG_PARAGRAPH}\n \nThird\x07 one.\n\n\n"
    reader = rawtext.RawReader(SpacyRules("en"), "in.txt")
    sentences = [s for start in range(0, len(text), size) for s in reader.feed(text[start:start + size])]
    sentences += reader.close()
    assert _conllu(sentences) == _conllu(raw_sentences(text, "en", "in.txt"))
    assert text_of(sentences) == text
    assert [s.sent_id for s in sentences] == [str(i) for i in range(1, len(sentences) + 1)]
    assert [s.line for s in sentences][:2] == [1, 4] and sentences[-1].line == 6


def test_a_sentence_longer_than_a_window_ends_at_its_last_white_space(monkeypatch):
    from kgparser.io import rawtext
    from kgparser.tokenize.rules import raw_sentences

    pytest.importorskip("spacy")
    monkeypatch.setattr(rawtext, "WINDOW", 30)
    text = "no punctuation anywhere in this long text of many words " * 3 + "x" * 70
    sentences = raw_sentences(text, "en")
    assert text_of(sentences) == text
    assert all(len(s.metadata["text"]) <= 30 for s in sentences)
    assert [s.forms for s in sentences][-3:] == [["x" * 30], ["x" * 30], ["x" * 10]]
    assert ["newpar" in s.metadata for s in sentences] == [True] + [False] * (len(sentences) - 1)


def test_a_giant_line_without_a_line_end_over_spacys_limit(parser, tmp_path):
    """1.16 million characters in one paragraph of one line, no line end: spaCy
    itself refuses texts over 1,000,000 characters (its error E088)."""
    model = save_tiny_model(tmp_path / "model.pt")
    text = ("Abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz " * 19 + "end. ") * 1150
    assert len(text) > 1_100_000 and "\n" not in text
    source, out = tmp_path / "giant.txt", tmp_path / "out.conllu"
    source.write_text(text, encoding="utf-8")
    assert main(["parse", "--model", str(model), "--input-format", "raw", str(source), "-o", str(out)]) == 0
    sentences = read_conllu(out)
    assert len(sentences) == 1150 and text_of(sentences) == text


CONTROL_TEXT = "A bell\x07rings.\x00NUL\x1b[31m red.\n\x07\nA new\x7f paragraph\x9b here."


def test_control_characters_are_white_space_and_the_text_rebuilds(parser, tmp_path):
    sentences = parser.parse(CONTROL_TEXT, input_format="raw")
    reread = parse_conllu(_conllu(sentences))
    assert text_of(reread) == CONTROL_TEXT
    assert [s.forms for s in reread][:2] == [["A", "bell", "rings", "."], ["NUL", "[", "31", "m", "red", "."]]
    assert ["newpar" in s.metadata for s in reread] == [True, False, True]
    assert reread[0].misc[1] == {"SpacesAfter": "\\u0007"}
    (tmp_path / "in.txt").write_text(CONTROL_TEXT, encoding="utf-8")
    out = tmp_path / "out.conllu"
    model = save_tiny_model(tmp_path / "model.pt")
    assert main(["parse", "--model", str(model), "--input-format", "raw", str(tmp_path / "in.txt"),
                 "-o", str(out)]) == 0
    assert text_of(read_conllu(out)) == CONTROL_TEXT


@pytest.mark.parametrize("lang, package", [("ja", "sudachipy"), ("ko", "natto-py"), ("th", "pythainlp"),
                                           ("vi", "pyvi")])
def test_a_tokenizer_that_needs_another_package_names_it(lang, package):
    from kgparser.tokenize import rules as rawtext

    spacy = pytest.importorskip("spacy")
    try:
        spacy.blank(lang)
    except ImportError:
        pass
    else:
        pytest.skip(f"spaCy's tokenizer for {lang} works here")
    with pytest.raises(RawTextError, match=rf"^spaCy's tokenizer for '{lang}' needs another package: "
                                           rf"pip install {package}.*; or give --lang xx"):
        rawtext.raw_sentences("Text.", lang)
