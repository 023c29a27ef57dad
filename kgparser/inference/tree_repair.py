"""Repairing what a final parser state holds into a valid UD tree.

A transition system's final state may leave words headless (every system
attaches them to the root, docs/transition-contract.md), several words on the root, or, with a
decoding constraint that misbehaves, a cycle.  UD wants exactly one root word
labeled ``root``; the papers' CoNLL-X data allowed several.  Which of the loose
words (headless, or attached to the root) becomes the root, and where the
others go, is ``decoding.root_choice`` (:data:`ROOT_CHOICES`):

* ``first``: the leftmost loose word is the root (a word the model attached to
  the root with the label ``root`` comes first), the others hang from it;
* ``last``: the same with the rightmost, which suits head-final languages;
* ``scored``: the model decides.  Each loose word's attachment to every word
  outside its own subtree is scored by the network as the arc action of a
  configuration where the system would consider that arc
  (:meth:`~kgparser.transitions.base.TransitionSystem.arc_probe`).  With root
  arcs in the system (Covington's ``root_node``, arc-eager with the root
  first), the root is the loose word
  whose root arc scores highest against its best other attachment; without
  them, the loose word whose best attachment scores lowest (the word the model
  least wants to attach anywhere).  The others take their best-scoring head
  that closes no cycle and crosses no arc (:func:`_attach_by_scores`), the
  most confident first, with that arc's best label.  A system without probes
  falls back to ``first``;
* ``multi``: no repair beyond cycles: every loose word is a dependent of the
  root, labeled ``root``, as in the papers' evaluations;
  ``kgparser evaluate`` scores such output as it is.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence, cast

from ..config import ROOT_CHOICES

__all__ = ["FALLBACK_LABEL", "ROOT_CHOICES", "ROOT_LABEL", "loose_words", "to_valid_tree"]

ROOT_LABEL = "root"
FALLBACK_LABEL = "dep"

#: dependent -> its probed attachments ``(score, head, label)``, best first (head 0: a root arc)
ArcScores = Mapping[int, Sequence[tuple[float, int, "str | None"]]]


def to_valid_tree(heads: Sequence[int], labels: Sequence[str | None],
                  prefer: Callable[[list[int]], list[int]] | None = None, choice: str = "first",
                  scores: ArcScores | None = None) -> tuple[list[int], list[str | None]]:
    """A UD tree from whatever a final state holds: cycles are broken, then the
    loose words are repaired as ``choice`` says (module docstring; ``scores``:
    the probed arcs, for ``scored``).  ``prefer`` maps the root-attached words to
    those to choose the root from first (decoding constraints)."""
    n = len(heads) - 1
    heads = [-1] + [h if h is not None and 0 <= h <= n and h != d else -1 for d, h in enumerate(heads) if d > 0]
    labels = list(labels)
    _break_cycles(heads)
    if not n:
        return heads, labels
    top = [d for d in range(1, n + 1) if heads[d] == 0]
    loose = sorted(top + [d for d in range(1, n + 1) if heads[d] == -1])
    if choice == "multi":
        roots = loose
    else:
        preferred = prefer(top) if prefer and len(top) > 1 else []  # one root dependent leaves no choice
        forced = preferred + [d for d in top if labels[d] == ROOT_LABEL]
        if choice == "scored" and scores and len(loose) > 1:
            roots = [forced[0] if forced else _scored_root(loose, scores)]
            _attach_by_scores(heads, labels, loose, roots[0], scores)
        else:
            roots = [(forced + (loose[::-1] if choice == "last" else loose))[0]]
    for d in range(1, n + 1):
        if d in roots:
            heads[d], labels[d] = 0, ROOT_LABEL
            continue
        if heads[d] in (0, -1):
            heads[d] = roots[0]
        if labels[d] in (None, ROOT_LABEL):
            labels[d] = FALLBACK_LABEL
    return heads, labels


def loose_words(heads: Sequence[int]) -> list[int]:
    """The words of a final state's ``heads`` (index 0 ignored) that are headless or
    hang from the root: the words :func:`to_valid_tree` repairs."""
    return [d for d in range(1, len(heads)) if heads[d] is None or heads[d] <= 0]


def _scored_root(loose: list[int], scores: ArcScores) -> int:
    """The loose word whose root arc beats its best other attachment by most, or,
    without root arcs, whose best attachment is weakest."""
    best: dict[int, float] = {}
    rooted: dict[int, float | None] = {}
    for d in loose:
        options = scores.get(d, ())
        best[d] = next((s for s, h, _ in options if h != 0), float("-inf"))
        rooted[d] = next((s for s, h, _ in options if h == 0), None)
    if all(rooted[d] is not None for d in loose):
        return max(loose, key=lambda d: (cast(float, rooted[d]) - best[d], -d))
    return min(loose, key=lambda d: (best[d], d))


def _attach_by_scores(heads: list[int], labels: list, loose: list[int], root: int, scores: ArcScores) -> None:
    """Attach every loose word but ``root`` to its best-scoring head that closes
    no cycle, the most confident first; ``heads`` and ``labels`` change in place.

    Among those heads, the best one whose arc crosses none of the arcs so far
    (the system's, the earlier repairs' and the root arc ``0 -> root``) comes
    first; only when every head crosses one does the best of them win.  A
    repair arc that crosses is rarely right (on Hungarian-Szeged test, 2-10%
    of such arcs had the gold head, against 13-33% of all repair arcs), and a
    loose fragment attached inside the arcs that span it makes those arcs
    projective again: experiments/results/README.md, "Repairs that cross no
    arc", measures it on 72 models."""
    options = {d: [option for option in scores.get(d, ()) if option[1] != 0] for d in loose if d != root}
    arcs = [(heads[d], d) for d in range(1, len(heads)) if heads[d] > 0] + [(0, root)]
    for d in sorted(options, key=lambda d: options[d][0][0] if options[d] else float("-inf"), reverse=True):
        acyclic = [(h, label) for _, h, label in options[d] if _top(heads, h) != d]
        head, label = next(((h, label) for h, label in acyclic if not _crosses_any((h, d), arcs)),
                            acyclic[0] if acyclic else (root, None))
        heads[d], labels[d] = head, label if label not in (None, ROOT_LABEL) else FALLBACK_LABEL
        arcs.append((head, d))


def _crosses_any(arc: tuple[int, int], arcs: list[tuple[int, int]]) -> bool:
    """Whether ``arc`` crosses one of ``arcs``: one end strictly inside the other
    arc's span and one strictly outside (arcs as (head, dependent) positions)."""
    low, high = sorted(arc)
    for other in arcs:
        a, b = sorted(other)
        if low < a < high < b or a < low < b < high:
            return True
    return False


def _top(heads: list[int], word: int) -> int:
    """The loose word at the top of ``word``'s tree (a tree of the repaired forest)."""
    while heads[word] > 0:
        word = heads[word]
    return word


def _break_cycles(heads: list[int]) -> None:
    """Detach one word of every cycle (its head becomes -1)."""
    n = len(heads) - 1
    color = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done
    for start in range(1, n + 1):
        path, d = [], start
        while d > 0 and color[d] == 0:
            color[d] = 1
            path.append(d)
            d = heads[d]
        if d > 0 and color[d] == 1:
            heads[d] = -1
        for p in path:
            color[p] = 2
