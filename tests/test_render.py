"""Pictures of trees: arc levels, every word, tag and label in the HTML page
and the SVG picture (escaped), the command line, and a real headless
browser (Debian's chromium) that draws the page: every word and arc label
is found in the rendered DOM with a non-empty box inside its picture;
skipped where no browser is installed."""
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from rawtext_models import save_tiny_model

from kgparser.cli import main
from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path
from kgparser.io.render import arc_levels, render

SVG = "{http://www.w3.org/2000/svg}"
ODD = parse_conllu("# sent_id = odd <1>\n# text = a <b> & \"c\"\n1\ta\t_\tX\t_\t_\t2\tdep:x<y\t_\t_\n"
                   "2\t<b>\t_\tNOUN\t_\t_\t0\troot\t_\t_\n3\t&\t_\tSYM\t_\t_\t2\tpunct\t_\t_\n"
                   "4\t\"c\"\t_\t_\t_\t_\t_\t_\t_\t_\n\n", require_tree=False)


def sentences():
    return list(read_conllu(sample_data_path("dev"))[:6]) + list(ODD)


def test_an_arc_is_drawn_one_level_above_the_arcs_it_spans():
    #        1 <- 2 -> 3, 2 -> 5, 5 -> 4, root 2
    assert arc_levels([-1, 2, 0, 2, 5, 2]) == [0, 1, 0, 1, 1, 2]
    assert arc_levels([-1, 0]) == [0, 0]


def test_the_svg_holds_every_word_tag_and_label():
    picture = render(sentences(), "svg")
    texts = [(e.get("class"), e.text or "") for e in ET.fromstring(picture).iter(f"{SVG}text")]
    for sentence in sentences():
        for d in range(1, sentence.n + 1):
            assert ("kg-word", sentence.forms[d - 1]) in texts
            if sentence.heads[d] >= 0:
                assert ("kg-label", sentence.deprels[d]) in texts
    assert ("kg-caption", 'odd <1>: a <b> & "c"') in texts
    assert ("kg-tag", "SYM") in texts


def test_the_page_escapes_what_the_sentences_hold():
    page = render(ODD, "html")
    assert "&lt;b&gt;" in page and "dep:x&lt;y" in page and "<b>" not in page.split("<body>")[1]
    assert page.count('<figure class="kg-sentence">') == 1


NOT_XML = "\x00\x01\x08\x0b\x0c\x0e\x1b\x1f\ud800\udfff\ufffe\uffff"
REPLACED = "\ufffd" * len(NOT_XML)


def test_characters_xml_forbids_are_replaced_so_every_picture_is_well_formed():
    text = f"# sent_id = s{NOT_XML}\n# text = a{NOT_XML}b\n1\ta\ufffeb\t_\tX\uffff\t_\t_\t0\troot\t_\t_\n\n"
    (sentence,) = parse_conllu(text)
    sentence.deprels[1] = "root\x01"  # as a model's label could be
    svg = render([sentence], "svg")
    texts = [e.text for e in ET.fromstring(svg.encode("utf-8")).iter(f"{SVG}text")]
    assert texts[0] == f"s{REPLACED}: a{REPLACED}b"
    assert texts[1:] == ["a\ufffdb", "X\ufffd", "root\ufffd"]
    page = render([sentence], "html")
    assert not any(c in page for c in NOT_XML) and page.encode("utf-8")
    ET.fromstring(page[page.index("<svg"):page.index("</svg>") + len("</svg>")])


def test_parse_draws_well_formed_pictures_of_a_file_holding_what_xml_forbids(tmp_path):
    model = save_tiny_model(tmp_path / "model.pt")
    source = tmp_path / "in.conllu"
    source.write_text("# text = a\x01\x1b[0m\ufffeb\n1\ta\ufffe\t_\t_\t_\t_\t_\t_\t_\t_\n"
                      "2\t\uffffb\t_\t_\t_\t_\t_\t_\t_\t_\n\n", encoding="utf-8")
    for picture_format in ("svg", "html"):
        out = tmp_path / f"out.{picture_format}"
        assert main(["parse", "-m", str(model), "--format", picture_format, str(source), "-o", str(out)]) == 0
        picture = out.read_text(encoding="utf-8")
        root = ET.fromstring(picture[picture.index("<svg"):picture.index("</svg>") + len("</svg>")])
        assert [e.text for e in root.iter() if e.get("class") == "kg-word"] == ["a\ufffd", "\ufffdb"]


@pytest.mark.filterwarnings("ignore::kgparser.inference.tags.TagWarning")
@pytest.mark.filterwarnings("ignore::kgparser.inference.parser.RulesFallback")
def test_parse_writes_pictures(tmp_path, capsys):
    pytest.importorskip("spacy")
    model = save_tiny_model(tmp_path / "model.pt")
    (tmp_path / "in.txt").write_text("A cat sleeps. It dreams.", encoding="utf-8")
    for picture_format in ("html", "svg"):
        out = tmp_path / f"out.{picture_format}"
        assert main(["parse", "-m", str(model), "--input-format", "raw", "--format", picture_format,
                     str(tmp_path / "in.txt"), "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert text.count('class="kg-word"') == 7 and text.count('class="kg-label"') == 7
    assert main(["parse", "-m", str(model), "--format", "html", str(sample_data_path("test"))]) == 0
    assert capsys.readouterr().out.startswith("<!DOCTYPE html>")


def browser() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


#: marks each text of the pictures with whether the browser gave it a box inside its picture
MEASURE = """<script>
for (const text of document.querySelectorAll("svg text")) {
  const box = text.getBBox(), view = text.ownerSVGElement.viewBox.baseVal;
  const inside = box.x >= -1 && box.y >= -1
    && box.x + box.width <= view.width + 1 && box.y + box.height <= view.height + 1;
  text.setAttribute("data-drawn", box.width > 0 && box.height > 0 && inside ? "yes" : "no");
}
</script>
"""


class Texts(HTMLParser):
    """``(class, data-drawn, text)`` of every SVG text of a dumped DOM."""

    def __init__(self):
        super().__init__()
        self.found, self._open = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "text":
            attrs = dict(attrs)
            self._open = [attrs.get("class"), attrs.get("data-drawn"), ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag):
        if tag == "text" and self._open is not None:
            self.found.append(tuple(self._open))
            self._open = None


def dump_dom(path, tmp_path) -> str:
    command = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
               "--dump-dom", path.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.skipif(browser() is None, reason="no headless browser (apt-get install chromium)")
def test_a_browser_draws_every_word_and_label(tmp_path):
    page = tmp_path / "trees.html"
    page.write_text(render(sentences(), "html").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    parser = Texts()
    parser.feed(dump_dom(page, tmp_path))
    drawn = [(kind, text) for kind, mark, text in parser.found if mark == "yes"]
    assert [found for found in parser.found if found[1] != "yes"] == []
    for sentence in sentences():
        for d in range(1, sentence.n + 1):
            assert ("kg-word", sentence.forms[d - 1]) in drawn
            if sentence.heads[d] >= 0:
                assert ("kg-label", sentence.deprels[d]) in drawn


@pytest.mark.skipif(browser() is None, reason="no headless browser (apt-get install chromium)")
def test_a_browser_reads_the_svg_picture(tmp_path):
    picture = tmp_path / "trees.svg"
    picture.write_text(render(sentences(), "svg"), encoding="utf-8")
    dom = dump_dom(picture, tmp_path)
    assert "parsererror" not in dom and "error on line" not in dom
    parser = Texts()
    parser.feed(dom)
    assert sum(kind == "kg-word" for kind, _, _ in parser.found) == sum(s.n for s in sentences())
