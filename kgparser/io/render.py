"""Pictures of parsed sentences (``kgparser parse --format html|svg``,
``Parser.render``): each tree drawn in the style of spaCy's displaCy, words
left to right with their UPOS below, every arc a curve above them from the
head to an arrow on the dependent, its label at the top of the curve, and the
root word's arrow coming from above with its label.  Plain SVG written here
(no dependency, the same picture whatever is installed): ``html`` is a page
with one picture per sentence under its ``sent_id`` and text, ``svg`` one
picture with every sentence, one under the other.

Arcs are stacked as displaCy stacks them: an arc is drawn one level above
the highest arc it spans, so nested arcs never touch; crossing
(non-projective) arcs cross.  A word without a head (``_``) has no arc.

Every text is escaped, and each character XML 1.0 forbids (a C0 control
but TAB, LF and CR, a lone surrogate, U+FFFE, U+FFFF), which CoNLL-U comments
and forms may hold, is drawn as U+FFFD: every picture is well-formed XML.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Sequence

from ..errors import KgparserError
from .atomic import write_text

if TYPE_CHECKING:
    from .conllu import Sentence

OUTPUT_FORMATS = ("conllu", "html", "svg")

_CHAR = 8.5        # average advance of a 14px sans-serif character
_PAD = 28          # space between word columns
_MIN_COLUMN = 56
_LEVEL = 38        # height of one level of arcs
_TOP = 12          # space above the root label
_WORDS_BELOW = 22  # baseline of the words below the arcs' feet
_TAGS_BELOW = 40   # baseline of the UPOS
_BOTTOM = 52       # from the arcs' feet to the bottom of a picture
_CAPTION = 24      # height of a sentence's caption in the SVG of all sentences
_ARROW = 7
#: the characters XML 1.0 allows in no document, not even as a character reference
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_STYLE = """\
.kg-word { font: 14px sans-serif; fill: #111; }
.kg-tag { font: 11px sans-serif; fill: #666; }
.kg-label { font: 11px sans-serif; fill: #1f4e8c; }
.kg-caption { font: 13px sans-serif; fill: #333; }
.kg-arc { fill: none; stroke: #1f4e8c; stroke-width: 1.5; }
.kg-arrow { fill: #1f4e8c; }"""

_PAGE = """\
<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>kgparser: {count} parsed sentence(s)</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
figure {{ margin: 0 0 1.5em 0; overflow-x: auto; }}
figcaption {{ color: #333; margin-bottom: 0.3em; }}
{style}
</style>
</head>
<body>
{figures}
</body>
</html>
"""


def check_format(output_format: str) -> None:
    """Refuse an output format other than :data:`OUTPUT_FORMATS` in one line."""
    if output_format not in OUTPUT_FORMATS:
        raise KgparserError(f"output format: expected one of {', '.join(OUTPUT_FORMATS)}, got {output_format!r}")


def render(sentences: Sequence, picture_format: str = "html") -> str:
    """An HTML page (``html``) or an SVG picture (``svg``) of the sentences' trees."""
    if picture_format not in OUTPUT_FORMATS[1:]:
        raise KgparserError(f"picture format: expected html or svg, got {picture_format!r}")
    return html_page(sentences) if picture_format == "html" else svg_document(sentences)


def write_picture(sentences: Sequence, target, picture_format: str) -> None:
    """Write :func:`render`'s picture to ``target``: an open text file, or a
    path written through :func:`kgparser.io.atomic.write_text` (``-``: standard output)."""
    picture = render(sentences, picture_format)
    if hasattr(target, "write"):
        target.write(picture)
    else:
        write_text(target, picture)


def html_page(sentences: Sequence) -> str:
    """A page with one figure per sentence: its caption and its tree."""
    figures = "\n".join(f'<figure class="kg-sentence">\n<figcaption>{_text(_caption(s))}</figcaption>\n'
                        f'{_svg(Layout.of(s))}\n</figure>' for s in sentences)
    return _PAGE.format(count=len(sentences), style=_STYLE, figures=figures)


def svg_document(sentences: Sequence) -> str:
    """One SVG picture of every sentence, each under its caption."""
    layouts = [Layout.of(s) for s in sentences]
    width = max([layout.width for layout in layouts], default=0)
    parts, y = [], 0.0
    for sentence, layout in zip(sentences, layouts):
        parts.append(f'<text class="kg-caption" x="4" y="{y + 16:.0f}">{_text(_caption(sentence))}</text>')
        parts.append(f'<g transform="translate(0,{y + _CAPTION:.0f})">{_tree(layout)}</g>')
        y += _CAPTION + layout.height
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}">\n<style>\n{_STYLE}\n</style>\n' + "\n".join(parts) + "\n</svg>\n")


def _text(value: str) -> str:
    """``value`` for an XML or HTML text or attribute: escaped, with U+FFFD for what XML forbids."""
    return escape(_NOT_XML.sub("\ufffd", value))


def _caption(sentence) -> str:
    sent_id = sentence.sent_id
    return f"{sent_id}: {sentence.text}" if sent_id else sentence.text


@dataclass
class Layout:
    """Where a sentence's words and arcs go: ``x[d]`` the centre of word d
    (index 0 unused), ``levels[d]`` the level of the arc onto d, ``top`` the
    highest level (the root's arrow comes from above it)."""

    sentence: Sentence
    x: list[float]
    levels: list[int]
    top: int
    width: float

    @classmethod
    def of(cls, sentence) -> Layout:
        n = sentence.n
        columns = [max(_MIN_COLUMN, _CHAR * max(len(sentence.forms[d - 1]), len(sentence.upos[d - 1] or ""),
                                                  len(sentence.deprels[d] or "")) + _PAD) for d in range(1, n + 1)]
        x, left = [0.0], 0.0
        for column in columns:
            x.append(left + column / 2)
            left += column
        levels = arc_levels(sentence.heads)
        return cls(sentence, x, levels, max(levels, default=0) + 1, left)

    @property
    def feet(self) -> float:
        """The y of the arcs' feet, just above the words."""
        return _TOP + 14 + self.top * _LEVEL

    @property
    def height(self) -> float:
        return self.feet + _BOTTOM


def arc_levels(heads: Sequence[int]) -> list[int]:
    """The level of the arc onto each word (0: no arc from a word): one above
    the highest arc strictly inside its span, shortest arcs first."""
    n = len(heads) - 1
    levels = [0] * (n + 1)
    arcs = sorted((abs(h - d), min(h, d), max(h, d), d) for d, h in enumerate(heads) if d and h > 0)
    for _, low, high, dependent in arcs:
        inside = [levels[d] for d in range(1, n + 1) if d != dependent and heads[d] > 0
                  and low <= min(d, heads[d]) and max(d, heads[d]) <= high]
        levels[dependent] = 1 + max(inside, default=0)
    return levels


def _svg(layout: Layout) -> str:
    """An inline SVG element of one tree (for an HTML page)."""
    return (f'<svg class="kg-tree" width="{layout.width:.0f}" height="{layout.height:.0f}" '
            f'viewBox="0 0 {layout.width:.0f} {layout.height:.0f}">{_tree(layout)}</svg>')


def _tree(layout: Layout) -> str:
    """The SVG elements of one tree: words, tags, arcs and labels."""
    sentence, feet = layout.sentence, layout.feet
    parts = [f"<title>{_text(sentence.text)}</title>"]
    for d in range(1, sentence.n + 1):
        x = layout.x[d]
        parts.append(f'<text class="kg-word" x="{x:.1f}" y="{feet + _WORDS_BELOW:.1f}" text-anchor="middle">'
                     f'{_text(sentence.forms[d - 1])}</text>')
        tag = sentence.upos[d - 1]
        if tag:
            parts.append(f'<text class="kg-tag" x="{x:.1f}" y="{feet + _TAGS_BELOW:.1f}" text-anchor="middle">'
                         f'{_text(tag)}</text>')
        head = sentence.heads[d]
        if head == 0:
            parts.append(_root_arrow(x, feet, sentence.deprels[d]))
        elif head > 0:
            parts.append(_arc(layout.x[head], x, feet, layout.levels[d], sentence.deprels[d]))
    return "".join(parts)


def _arc(head_x: float, x: float, feet: float, level: int, label: str | None) -> str:
    """A curve from the head's foot to the dependent's, its top ``level`` levels up."""
    top = feet - level * _LEVEL
    control = feet - (feet - top) * 4 / 3  # a cubic's middle lies 3/4 of the way to its controls
    return (f'<path class="kg-arc" d="M{head_x:.1f},{feet:.1f} C{head_x:.1f},{control:.1f} '
            f'{x:.1f},{control:.1f} {x:.1f},{feet:.1f}"/>{_arrow(x, feet)}'
            f'<text class="kg-label" x="{(head_x + x) / 2:.1f}" y="{top - 4:.1f}" text-anchor="middle">'
            f'{_text(label or "_")}</text>')


def _root_arrow(x: float, feet: float, label: str | None) -> str:
    return (f'<path class="kg-arc" d="M{x:.1f},{_TOP + 16:.1f} L{x:.1f},{feet:.1f}"/>{_arrow(x, feet)}'
            f'<text class="kg-label" x="{x:.1f}" y="{_TOP + 10:.1f}" text-anchor="middle">'
            f'{_text(label or "_")}</text>')


def _arrow(x: float, feet: float) -> str:
    return (f'<path class="kg-arrow" d="M{x - _ARROW / 2:.1f},{feet - _ARROW:.1f} '
            f'L{x + _ARROW / 2:.1f},{feet - _ARROW:.1f} L{x:.1f},{feet:.1f} Z"/>')
