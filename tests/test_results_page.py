"""Every figure in the README and in the documentation pages is on the current-results page
(docs/results.md), so that none can be stale or measured nowhere (issue 50, item 3).

A *figure* is a measured number as the pages write them:

* a decimal with exactly two decimal places (``88.43``, ``0.42``, ``99.54%``);
* a p-value style decimal, ``0.`` and three or four digits (``0.076``, ``0.0001``);
* a number with a thousands comma (``1,698``, ``1,022,885``);
* a speed-up (``1.57x``, ``12×``).

Not figures: version strings (``2.13.0``, ``>=4.40``, ``Python 3.11``, ``torch 2.11``), anything in a
code block of a programming or configuration language (```` ```bash ````, ```` ```yaml ````,
```` ```python ```` ...; a fence without a language, such as a report's output, is checked) or in an
indented code block (commands), inline code spans, link targets, and the constants in ``NOT_FIGURES``
(settings and sizes that the pages state, not measure). The history pages
(docs/history/) keep the lab notes as they were written, superseded figures included, and are not
checked; nor is the results page itself, the source.
"""
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results.md"

#: numbers the pages give that are settings or sizes, not measurements
NOT_FIGURES = {
    "1,024": "sentences whose encoder states a parse keeps (PARSE_CACHE_SENTENCES)",
    "2,000": "sentences per chunk of `kgparser parse` (--chunk-size)",
    "20,000": "characters per window of a long paragraph",
    "1,000": "hinge violations past which training counts as diverged",
    "1,800": "seconds before a collective times out (KGPARSER_DIST_TIMEOUT)",
    "10,000": "bootstrap samples of `kgparser evaluate --against`",
    "20,000,000": "Attardi's default work budget",
    "200,000": "Attardi's earlier default work budget",
    "250,002": "pieces of e5's tokenizer",
    "20000": "model.pretrained.max_extra_words' default",
    "0.33": "a dropout rate",
    "0.25": "model.word_dropout's default",
    "0.999": "Adam's beta2",
    "0.9995": "training.ema_decay",
    "0.01": "a significance level",
    "0.05": "a significance level",
}

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
#: fenced blocks of these languages hold code, whose numbers are settings; other fenced blocks (output) are checked
CODE_LANGUAGES = {"bash", "sh", "shell", "zsh", "console", "yaml", "yml", "python", "py", "python3", "pycon", "toml",
                  "ini", "cfg", "json", "diff", "make", "dockerfile"}
CODE_SPAN = re.compile(r"(`+)(?:(?!\1)[\s\S])+?\1")
#: a link's target, an HTML tag or an autolink (not "p < 0.05 ... ->")
LINK_TARGET = re.compile(r"\]\([^)]*\)|<[A-Za-z/!][^>\n]*>")
VERSION = re.compile(
    r"\d+(?:\.\d+){2,}"                                   # 2.13.0
    r"|(?:[<>!~=]=|[<>])\s*\d+(?:\.\d+)+"                 # >=4.40, < 0.05
    r"|\b(?:Python|python|torch|spaCy|spacy|transformers|tokenizers|UUParser|uuparser|CUDA|cuda|Ray|ray|DyNet"
    r"|dyNET38|numpy|NumPy|UD|mkdocs|MkDocs|Material|mkdocstrings|hatchling|pip|version|v)\s*\d+(?:\.\d+)+\+?")
FIGURE = re.compile(
    r"(?<![\w.,])(?:"
    r"\d{1,3}(?:,\d{3})+(?!\d)"                           # 1,698
    r"|\d+\.\d+(?:[x×](?!\w))"                            # 1.57x
    r"|\d+[x×](?!\w)"                                     # 12×
    r"|\d+\.\d{2}(?!\d|\.\d)"                             # 88.43, not 1.23.4
    r"|0\.\d{3,4}(?!\d|\.\d)"                             # 0.076, 0.0001
    r")")


def prose(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a Markdown page outside code blocks, with code spans (which may run over a line end)
    and link targets blanked out."""
    fence = ""
    code = False
    blank = True
    indented = False
    paragraph: list[tuple[int, str]] = []

    def flush() -> Iterator[tuple[int, str]]:
        # a code span ends within its paragraph: blank the spans of the joined lines, keeping the line ends
        joined = "\n".join(line for _, line in paragraph)
        joined = CODE_SPAN.sub(lambda span: re.sub(r"[^\n]", " ", span.group(0)), joined)
        for (number, _), line in zip(paragraph, joined.split("\n")):
            yield number, LINK_TARGET.sub("]", line)
        paragraph.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if fence:
            if line.strip().startswith(fence):
                fence = ""
            elif not code:
                yield number, line
            continue
        opening = FENCE.match(line)
        if opening:
            yield from flush()
            fence = opening.group(1)[:3]
            code = opening.group(2).lower() in CODE_LANGUAGES
            continue
        if not line.strip():
            yield from flush()
            blank = True
            continue
        # an indented code block: four spaces after a blank line (or after its own lines), not a list item's
        if line.startswith(("    ", "\t")) and (blank or indented) and not line.lstrip().startswith(("* ", "- ", "|")):
            indented = True
            blank = False
            continue
        indented = blank = False
        paragraph.append((number, line))
    yield from flush()


def figures(text: str) -> Iterator[tuple[int, str]]:
    for number, line in prose(text):
        for match in FIGURE.finditer(VERSION.sub(" ", line)):
            yield number, match.group(0).replace("×", "x")


def checked_pages() -> list[Path]:
    pages = [ROOT / "README.md"]
    pages += sorted(path for path in DOCS.rglob("*.md")
                    if path != RESULTS and DOCS / "history" not in path.parents)
    return [path for path in pages if path.exists()]


def test_figure_definition():
    text = "\n".join([
        "LAS 88.43 / 91.04 at 1,698 words/s, 1.57x, 12× faster, p = 0.076; 0.0001 and 99.54%.",
        "Python 3.11, torch 2.13.0, transformers>=4.40, version 2.11, `88.88` and [a](x/1.23.md).",
        "```bash",
        "kgparser train --set training.lr=77.77",
        "```",
        "```",
        "LAS 55.55",
        "```",
        "",
        "    python bench.py --repeat 66.66",
        "",
        "dropout 0.33, 20,000,000 units; 3.5 and 7.1% and 2 × 125; `a code span",
        "over a line end 33.33` 44.44.",
    ])
    found = [figure for _, figure in figures(text)]
    assert found == ["88.43", "91.04", "1,698", "1.57x", "12x", "0.076", "0.0001", "99.54", "55.55",
                     "0.33", "20,000,000", "44.44"]


def test_every_figure_of_the_pages_is_on_the_results_page():
    assert RESULTS.exists(), "docs/results.md is missing"
    # a speed-up is the same figure with or without its "x" ("1.95 times", "1.95x")
    current = {figure.rstrip("x") for _, figure in figures(RESULTS.read_text(encoding="utf-8"))}
    missing = []
    for page in checked_pages():
        for number, figure in figures(page.read_text(encoding="utf-8")):
            if figure.rstrip("x") not in current and figure not in NOT_FIGURES:
                missing.append(f"{page.relative_to(ROOT)}:{number}: {figure}")
    assert not missing, (f"{len(missing)} figures are not on docs/results.md (add the current figure there, with its "
                         "command, seeds, machine and commit, or drop a superseded one):\n" + "\n".join(missing))
