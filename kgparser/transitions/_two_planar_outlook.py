"""What the 2-Planar dynamic oracle (:class:`kgparser.transitions.two_planar.TwoPlanarDynamicOracle`)
looks at to price an action (Fernández-González & Gómez-Rodríguez 2018,
section 3): :class:`Outlook`, the reachability of each gold arc in a
configuration relative to the canonical planes, the cycles that built and
reachable arcs form, and the small helpers the oracle's loss changes and
shortest-computation lengths are made of."""
from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Sequence

from ._two_planar_planes import NO_PLANE
from .base import NO_HEAD

if TYPE_CHECKING:
    from .two_planar import CanonicalGold, TwoPlanarState

def gold_cycles(now: Outlook, needed: Sequence[int]) -> list[list[int]]:
    """The cycles of ``A ∪ I1 ∪ I2``, each as the dependents of its arcs not
    built yet (tree roots whose gold arc is reachable, ``needed``), found
    by following :meth:`Outlook.target` from each once."""
    mark = dict.fromkeys(needed, 0)  # 0 unseen, 1 on the current walk, 2 done
    cycles = []
    for start in needed:
        walk, node = [], start
        while mark.get(node) == 0:
            mark[node] = 1
            walk.append(node)
            node = now.target(node)
        if mark.get(node) == 1:
            cycles.append(walk[walk.index(node):])
        for w in walk:
            mark[w] = 2
    return cycles


def covered_words(inside: tuple[list[int], list[int]], stacks: tuple[list[int], list[int]], b: int) -> int:
    """Words strictly inside some arc of their plane (``inside[p]``: a
    difference array of arc interiors) that are on that plane's stack or not
    shifted yet: the reduces of the lazy computation."""
    count = 0
    for plane in (0, 1):
        on_stack = set(stacks[plane])
        depth = 0
        for w, step in enumerate(inside[plane]):
            depth += step
            if depth and (w >= b or w in on_stack):
                count += 1
    return count


def lazy_switches(work: dict[int, set[int]], active: int) -> int:
    """Switches needed to be in each plane of ``work[y]`` while ``y`` is
    ``b0``, in order of ``y``, starting in plane ``active``: finishing the
    active plane first and then switching is never worse than switching
    twice."""
    switches = 0
    for y in sorted(work):
        planes = work[y]
        if planes != {active}:
            switches += 1
            active = 1 - active
    return switches


def unreachable_change(now: Outlook, arcs: Sequence[int]) -> int:
    """Loss change of an action that builds nothing and makes the gold arcs
    into ``arcs`` (dependents) unreachable unless built, and nothing else
    (trees stay as they are): each one still reachable now is lost, and the
    graph ``A ∪ I1 ∪ I2`` loses it, which breaks the cycles through it (each
    through its dependent, a tree root) and makes no new one."""
    gone = [d for d in arcs if now.target(d) != NO_HEAD]
    return len(gone) - now.cycles_through(gone)


def arc_change(now: Outlook, after: Outlook, dep: int, top: int) -> int:
    """Loss change of building the arc into the headless ``dep`` (``after``)
    whose head's tree has root ``top``.  Only ``dep``'s own arc changes its
    status (built right, or lost), and only ``top`` can now have its gold
    head in its own tree (acyclicity).  Every other tree root keeps its edge
    in ``A ∪ I1 ∪ I2``, except that the edges into ``dep``'s tree now reach
    ``top``, whose tree absorbs it; so the cycles that disappear or appear
    are those through ``dep`` or ``top``."""
    words = (dep, top)
    lost = sum(after.lost(d) - now.lost(d) for d in words)
    return lost + after.cycles_through(words) - now.cycles_through(words)


class Outlook:
    """What the loss of a configuration depends on, for the configuration
    itself or the one an action leads to (without building it): the buffer
    starts at ``first`` (``b + 1`` after a shift, which puts ``b`` on both
    stacks), ``popped = (plane, word)`` has left that stack, ``arc = (head,
    dep, plane)`` has been built.  Stacks hold words in increasing order, so
    membership is a binary search."""

    __slots__ = ("gold", "gplane", "headless_gold", "heads", "plane", "stacks", "b", "first",
                 "popped_plane", "popped", "arc_head", "arc_dep", "arc_plane", "_targets")

    def __init__(self, canon: CanonicalGold, state: TwoPlanarState, *, first: int | None = None,
                 popped: tuple[int, int] = (NO_PLANE, NO_HEAD),
                 arc: tuple[int, int, int] = (NO_HEAD, NO_HEAD, NO_PLANE)):
        self.gold, self.gplane, self.headless_gold = canon.heads, canon.plane, canon.headless_gold
        self.heads, self.plane, self.stacks, self.b = state.heads, state.plane, state.stacks, state.b
        self.first = state.b if first is None else first
        self.popped_plane, self.popped = popped
        self.arc_head, self.arc_dep, self.arc_plane = arc
        self._targets: dict[int, int] = {}

    def root(self, word: int) -> int:
        """The headless word at the top of ``word``'s tree."""
        heads, dep = self.heads, self.arc_dep
        while True:
            head = heads[word]
            if head == NO_HEAD:
                if word != dep:
                    return word
                head = self.arc_head
            word = head

    def _on_stack(self, plane: int, word: int) -> bool:
        if word == self.popped and plane == self.popped_plane:
            return False
        stack = self.stacks[plane]
        at = bisect_left(stack, word)
        return at < len(stack) and stack[at] == word

    def target(self, dep: int) -> int:
        """The edge out of ``dep`` in ``A ∪ I1 ∪ I2`` up to the built arcs:
        for a headless ``dep`` whose gold arc is individually reachable, the
        root of its gold head's tree; else :data:`NO_HEAD`."""
        found = self._targets.get(dep)
        if found is None:
            found = self._targets[dep] = self._find_target(dep)
        return found

    def _find_target(self, dep: int) -> int:
        gold = self.gold[dep]
        if gold == self.headless_gold or gold == NO_HEAD or dep == self.arc_dep or self.heads[dep] != NO_HEAD:
            return NO_HEAD
        lo, hi = (gold, dep) if gold < dep else (dep, gold)
        if hi < self.first or (lo < self.b and not self._on_stack(self.gplane[dep], lo)):
            return NO_HEAD
        top = self.root(gold)
        return NO_HEAD if top == dep else top

    def lost(self, dep: int) -> int:
        """1 if the gold arc into ``dep`` counts as lost: in ``U1 ∪ U2``, or
        a gold root word with a head (without the root node); else 0.  (Arcs dropped from a
        non-2-planar tree are lost in every configuration and never change
        the loss.)"""
        gold = self.gold[dep]
        if dep == self.arc_dep:
            head, plane = self.arc_head, self.arc_plane
        else:
            head, plane = self.heads[dep], self.plane[dep]
        if head != NO_HEAD:
            if gold == self.headless_gold:
                return 1
            return int(gold != NO_HEAD and (head != gold or plane != self.gplane[dep]))
        return int(gold != self.headless_gold and gold != NO_HEAD and self.target(dep) == NO_HEAD)

    def cycle_from(self, dep: int) -> list[int]:
        """The tree roots on the cycle of ``A ∪ I1 ∪ I2`` through the tree
        root ``dep``, or ``[]`` when there is none (or ``dep`` has a head).
        Cycles are followed from root to root, from dependent to head."""
        walk, seen = [dep], {dep}
        top = self.target(dep)
        while top != NO_HEAD:
            if top == dep:
                return walk
            if top in seen:
                return []
            walk.append(top)
            seen.add(top)
            top = self.target(top)
        return []

    def cycles_through(self, words: Sequence[int]) -> int:
        """How many distinct cycles of ``A ∪ I1 ∪ I2`` go through one of the
        tree roots among ``words``."""
        on_cycle: set[int] = set()
        count = 0
        for dep in words:
            if dep not in on_cycle:
                cycle = self.cycle_from(dep)
                if cycle:
                    count += 1
                    on_cycle.update(cycle)
        return count
