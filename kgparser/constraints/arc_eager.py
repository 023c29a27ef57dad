"""The constrained arc-eager system of the paper (Figure 2; section 4 for
spans), with the root at the end of the buffer, and its state."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..transitions.arc_eager import LEFT, REDUCE, RIGHT, SHIFT, ArcEager, ArcEagerState
from ..transitions.base import NO_HEAD, ROOT
from .forest import covering_arc_ends, rightmost_reached
from .records import FREE, NONE_OUTSIDE, SPAN_ROOT_ONLY
from .system import ConstrainedSystem

if TYPE_CHECKING:
    from .sentence import Constraints


class ConstrainedArcEagerState(ArcEagerState):
    """An arc-eager state plus the span bookkeeping of section 4:
    ``span_root[s]``, the designated root of span ``s`` (``-1`` while unknown);
    ``components`` (``#CC``), the number of words of the current span pushed so
    far that have no head inside it; and, for each pushed span word,
    ``component[w]``, the word of its component that has no head inside the
    span, with ``reach[c]``, the rightmost word that component's constrained
    arcs reach."""

    __slots__ = ("span_root", "components", "component", "reach", "chain", "extent")

    span_root: list[int]
    components: int
    component: list[int]
    reach: list[int]
    chain: list[int]
    extent: list[int]

    def copy(self) -> ConstrainedArcEagerState:
        new = self._copy_arcs_to(object.__new__(ConstrainedArcEagerState))
        new.stack = self.stack[:]
        new.b = self.b
        new.popped = self.popped[:]
        new.span_root = self.span_root[:]
        new.components = self.components
        new.component = self.component[:]
        new.reach = self.reach[:]
        new.chain = self.chain[:]
        new.extent = self.extent[:]
        return new

    def key(self) -> tuple:
        return (*super().key(), tuple(self.span_root), self.components)


class ConstrainedArcEager(ConstrainedSystem):
    """Figure 2 of the paper: arc-eager with the root at the end of the buffer
    and the added preconditions for arc and span constraints, each O(1).

    Constrained arcs: an action may not take away a constrained head or
    dependent (section 3).  Spans (section 4): the designated root of a span
    takes no head inside it and is not reduced before the span's last word is
    pushed; no other span word takes an outside head; the span's last word is
    pushed only if that leaves one component (``#CC``); NONE / ROOT restrict
    outside dependents.  A word becomes its span's designated root when it
    takes an outside head or (ROOT) an outside dependent, or when the arc
    constraints say so.

    Combining both kinds needs more than the conjunction of the paper's
    preconditions (its section 4 only adds consistency checks); exhaustive
    search finds dead ends without these three additions, each O(1) with
    bookkeeping updated on ``shift``/``right``:

    * *forced span roots*: a headless stack word takes its head from the
      right, beyond every word its component's constrained arcs reach; if they
      reach the span's last word, that head is outside and the component must
      be the span's root, so this may only happen to the span's single
      component (span 1..4 with the arc 3 -> 4 otherwise reaches the dead end
      ``stack [1, 3], buffer [4]``);
    * *possible span roots*: a word under a constrained arc from a span word
      to an outside word, or with its constrained head inside the span, can
      never be the span's root;
    * *heads to the right*: a headless stack word must still have a possible
      head to its right, no further than the nearest constrained arc over it
      (it is dominated by that arc's head), beyond its subtree (which holds
      the whole of any other span one of whose words it holds), and not in a
      span whose option forbids outside dependents (the arc 1 -> 3 with span
      3..3 NONE must not shift word 2, which could then only attach to 3).
    """

    def __init__(self, system: ArcEager, constraints: Constraints, n: int, *, checked: bool = False):
        if not (isinstance(system, ArcEager) and system.root == "end"):
            constraints.fail("span constraints need the arc-eager system with root='end'")
        super().__init__(system, constraints, n)
        if not checked:
            constraints.check(n)
        heads = self.required_head
        # the leftmost constrained dependent of each word on its left (-1: none)
        self.waiting_dep = waiting = [NO_HEAD] * (n + 1)
        self.rightmost_dep = rightmost = [NO_HEAD] * (n + 1)
        for a in constraints.arcs:
            if a.dep < a.head and (waiting[a.head] == NO_HEAD or a.dep < waiting[a.head]):
                waiting[a.head] = a.dep
            if a.dep > rightmost[a.head]:
                rightmost[a.head] = a.dep
        self.spans = sorted(constraints.spans, key=lambda s: s.first) if constraints.spans else []
        self.span_of = [NO_HEAD] * (n + 1)
        for i, s in enumerate(self.spans):
            self.span_of[s.first:s.last + 1] = [i] * (s.last + 1 - s.first)
        self.preset_roots = self._roots_from_arcs()
        inner = {a.dep for a in constraints.arcs if a.head > 0}  # words with a head among words
        self.reach_right = rightmost_reached(heads, self._fixed_span_ends(), inner)
        self.root_possible = self._possible_span_roots()
        self.cover_end = covering_arc_ends(heads, inner)
        self.outside_head_slots = self._count_outside_head_slots()
        self._find_word_tables()

    def _find_word_tables(self) -> None:
        """What :meth:`legal_actions` decides by table lookups for the words
        in no span (each list also has the root's entry), besides
        ``waiting_dep`` and ``rightmost_dep``:

        * ``may_shift[w]``: for ``w`` in no span, the preconditions of
          ``shift`` other than its left dependents hold whatever the state: it
          is not constrained to a head on its left, and it can still take a
          head on its right (its head is constrained, or a word that may take
          an outside dependent lies past its subtree and before the end of the
          nearest constrained arc over it, see :meth:`_has_right_head`);
        * ``chain_free[w]``: a headless stack word ``w`` always has a possible
          head to its right (its head is constrained, or it is in no span and
          under no constrained arc): ``right`` may extend its chain."""
        heads, span_of, cover, n = self.required_head, self.span_of, self.cover_end, self.n
        reach, slots = self.reach_right, self.outside_head_slots
        span_words = [w for s in self.spans for w in range(s.first, s.last + 1)]
        self.chain_free = chain_free = [end > n for end in cover]
        for w in span_words:
            chain_free[w] = False
        for a in self.constraints.arcs:
            chain_free[a.dep] = True
        self.may_shift = may_shift = list(chain_free)
        for w in span_words:
            may_shift[w] = False
        for a in self.constraints.arcs:
            if ROOT < a.head < a.dep:
                may_shift[a.dep] = False
        for w in [w for w, end in enumerate(cover) if end <= n]:  # under a constrained arc
            if heads[w] == NO_HEAD and span_of[w] < 0:
                end = cover[w]
                may_shift[w] = reach[w] < end and slots[end] > slots[reach[w]]

    def _roots_from_arcs(self) -> list[int]:
        """Section 4: the designated root of each span fixed by the arcs (a
        span word with an outside head, or under ROOT with an outside
        dependent), ``-1`` where the arcs leave it open."""
        roots = [NO_HEAD] * len(self.spans)
        if not self.spans:
            return roots
        for a in self.constraints.arcs:
            span_head = self.span_of[a.head] if a.head > 0 else NO_HEAD
            span_dep = self.span_of[a.dep]
            if span_head == span_dep:
                continue
            if span_dep >= 0:
                roots[span_dep] = a.dep
            if span_head >= 0 and self.spans[span_head].outside == SPAN_ROOT_ONLY:
                roots[span_head] = a.head
        return roots

    def _fixed_span_ends(self) -> list[int]:
        """For each word, the last word its subtree surely reaches without
        the other arcs: the end of its span if the arcs make it the span's
        root, else itself."""
        ends = list(range(self.n + 1))
        for i, root in enumerate(self.preset_roots):
            if root != NO_HEAD:
                ends[root] = self.spans[i].last
        return ends

    def _possible_span_roots(self) -> list[bool]:
        """Whether each span word may be its span's root as far as the arcs
        say: its constrained head is not inside the span, and no constrained
        arc from a span word to an outside word passes over it (the span root
        dominates every span word, so such an arc would make it dominate its
        own ancestor)."""
        heads, span_of = self.required_head, self.span_of
        possible = [True] * (self.n + 1)
        if not self.spans:
            return possible
        lowest = [s.first for s in self.spans]
        highest = [s.last for s in self.spans]
        for a in self.constraints.arcs:
            h, d = a.head, a.dep
            span = span_of[h] if h > 0 else NO_HEAD
            if span >= 0 and span_of[d] != span:
                if d < self.spans[span].first:
                    lowest[span] = max(lowest[span], h)
                else:
                    highest[span] = min(highest[span], h)
        for span, s in enumerate(self.spans):
            for w in range(s.first, s.last + 1):
                inside_head = heads[w] > 0 and span_of[heads[w]] == span
                possible[w] = lowest[span] <= w <= highest[span] and not inside_head
        return possible

    def _count_outside_head_slots(self) -> list[int]:
        """Prefix counts of the words that may take a dependent from outside
        their span (not in a NONE span; in a ROOT span, a possible root)."""
        if not self.spans:
            return list(range(self.n + 1))
        counts = [0] * (self.n + 1)
        for x in range(1, self.n + 1):
            span = self.span_of[x]
            option = self.spans[span].outside if span >= 0 else FREE
            ok = option == FREE or option == SPAN_ROOT_ONLY and self.root_possible[x]
            counts[x] = counts[x - 1] + ok
        return counts

    def _has_right_head(self, state, word: int, extent: int) -> bool:
        """Whether a headless stack word whose subtree reaches ``extent`` can
        still find a head to its right: not past the end of the nearest
        constrained arc over it, and not a word whose span forbids outside
        dependents."""
        if self.required_head[word] != NO_HEAD:
            return True
        last = self.cover_end[word]
        span = self.span_of[word]
        if span >= 0:
            end = self.spans[span].last
            if extent < min(last, end) and state.span_root[span] != word:
                return True
            if not self._may_become_root(state, word, span):
                return False
            extent = max(extent, end)
        if last > self.n:
            return True
        return extent < last and self.outside_head_slots[last] > self.outside_head_slots[extent]

    def _chain_extent(self, state, chain: int, word: int) -> int:
        """How far right the subtree of the headless stack word ``chain``
        reaches once ``word`` joins it: a word of another span brings its
        whole span along (the span's root is then in the subtree)."""
        extent = max(state.extent[chain], self.reach_right[word])
        span = self.span_of[word]
        if span >= 0 and span != self.span_of[chain]:
            extent = max(extent, self.spans[span].last)
        return extent

    def initial_state(self, n: int | None = None) -> ConstrainedArcEagerState:
        state = object.__new__(ConstrainedArcEagerState)
        ArcEagerState.__init__(state, self.n, [])
        state.span_root = self.preset_roots[:]
        state.components = 0
        state.component = [NO_HEAD] * (self.n + 1)
        state.reach = [NO_HEAD] * (self.n + 1)
        state.chain = [NO_HEAD] * (self.n + 1)
        state.extent = [NO_HEAD] * (self.n + 1)
        return state

    def unconstrained_state(self, n: int) -> ConstrainedArcEagerState:
        """An initial state of this system's state class for a sentence
        without constraints, which the plain arc-eager system advances: a
        decoder that gives such states to the unconstrained sentences of a
        batch keeps its attribute lookups specialized to one class (CPython
        specializes them per class: decoding the test set of the speed
        demonstration with half of the states of each class took about 3%
        more time)."""
        state = object.__new__(ConstrainedArcEagerState)
        ArcEagerState.__init__(state, n, [])
        state.span_root, state.components, state.component, state.reach = [], 0, [], []
        state.chain, state.extent = [], []
        return state

    def _span(self, word: int) -> int:
        return self.span_of[word] if word > 0 else NO_HEAD

    def _may_become_root(self, state, word: int, span: int) -> bool:
        return state.span_root[span] in (NO_HEAD, word) and self.root_possible[word]

    def _may_take_outside_dep(self, state, word: int, span: int) -> bool:
        option = self.spans[span].outside
        if option == FREE:
            return True
        if option == NONE_OUTSIDE:
            return False
        head = state.heads[word]
        inside_head = head != NO_HEAD and self._span(head) == span
        return self._may_become_root(state, word, span) and not inside_head

    def _keeps_constrained_deps(self, state, word: int) -> bool:
        """``word`` leaves the stack: no constrained dependent may be in the buffer."""
        return self.rightmost_dep[word] < state.b

    def _left_deps_done(self, state, word: int) -> bool:
        """``word`` enters the stack: its constrained left dependents are
        attached already (they are popped by ``left`` nearest first, so the
        leftmost is the last)."""
        k = self.waiting_dep[word]
        return k == NO_HEAD or state.heads[k] != NO_HEAD

    def _may_push(self, state, word: int, head: int) -> bool:
        """Push ``word`` (with ``head``, or ``-1`` for shift): the last word of
        a span may only enter if the span is then one component, and a
        component that must become the span's root must be its only one."""
        span = self.span_of[word]
        if span < 0:
            return True
        components = self._components_after_push(state, word, head)
        if word == self.spans[span].last and components != 1:
            return False
        top = self._forced_top(state, word, head)
        return top == NO_HEAD or (components == 1 and self._may_become_root(state, top, span))

    def _forced_top(self, state, word: int, head: int) -> int:
        """The component word that pushing ``word`` forces to be the root of
        its span (``-1`` if none)."""
        span = self.span_of[word]
        joins = head != NO_HEAD and self._span(head) == span
        top = state.component[head] if joins else word
        reach = max(state.reach[top], self.reach_right[word]) if joins else self.reach_right[word]
        if reach >= self.spans[span].last or state.span_root[span] == word:
            return top
        return NO_HEAD

    def _components_after_push(self, state, word: int, head: int) -> int:
        span = self.span_of[word]
        if head != NO_HEAD and self._span(head) == span:
            return state.components
        return 1 if word == self.spans[span].first else state.components + 1

    def _left_ok(self, state, s0: int, b0: int) -> bool:
        required = self.required_head[s0]
        if required not in (NO_HEAD, b0) or not self._keeps_constrained_deps(state, s0):
            return False
        si, sj = self.span_of[s0], self._span(b0)
        if si >= 0:
            if si == sj:
                if state.span_root[si] == s0:
                    return False
            elif not self._may_become_root(state, s0, si):
                return False
        return sj < 0 or si == sj or self._may_take_outside_dep(state, b0, sj)

    def _right_ok(self, state, s0: int, b0: int) -> bool:
        required = self.required_head[b0]
        if required not in (NO_HEAD, s0) or not self._left_deps_done(state, b0):
            return False
        si, sj = self.span_of[s0], self.span_of[b0]
        if sj >= 0:
            if si == sj:
                if state.span_root[sj] == b0:
                    return False
            elif not self._may_become_root(state, b0, sj):
                return False
        if si >= 0 and si != sj and not self._may_take_outside_dep(state, s0, si):
            return False
        chain = state.chain[s0]
        if not self._has_right_head(state, chain, self._chain_extent(state, chain, b0)):
            return False
        return self._may_push(state, b0, s0)

    def _reduce_ok(self, state, s0: int, b0: int) -> bool:
        if not self._keeps_constrained_deps(state, s0):
            return False
        si = self.span_of[s0]
        return not (si >= 0 and self._span(b0) == si and state.span_root[si] == s0)

    def _shift_ok(self, state, b0: int) -> bool:
        required = self.required_head[b0]
        if ROOT < required < b0 or not self._left_deps_done(state, b0):
            return False
        if not self._has_right_head(state, b0, self.reach_right[b0]):
            return False
        return self._may_push(state, b0, NO_HEAD)

    def legal_actions(self, state) -> list[str]:
        """The legal actions whose preconditions hold, in one pass (the
        decoder's call in every state), in arc-eager's order.  Where no span
        is involved (``s0``, ``b0`` and the bottom of ``s0``'s chain in no
        span) the preconditions are inlined table lookups
        (:meth:`_find_word_tables`); otherwise the full checks decide."""
        b, stack, heads, span_of = state.b, state.stack, state.heads, self.span_of
        if b > self.n:  # only the root is left: s0 takes it as head, or is reduced
            if not stack:
                return []
            s0 = stack[-1]
            if heads[s0] != NO_HEAD:
                # no constrained dependent is left in the buffer, and the root is in no span
                return [REDUCE]
            if span_of[s0] < 0:
                return [LEFT] if self.required_head[s0] <= ROOT else []
            return [LEFT] if self._left_ok(state, s0, ROOT) else []
        waiting = self.waiting_dep[b]
        deps_done = waiting < 0 or heads[waiting] != NO_HEAD  # b0's constrained left dependents are attached
        if not stack:
            return [SHIFT] if (self.may_shift[b] and deps_done if span_of[b] < 0 else self._shift_ok(state, b)) else []
        s0 = stack[-1]
        chain = state.chain[s0]
        if span_of[b] >= 0 or span_of[s0] >= 0 or span_of[chain] >= 0:
            return self._checked_actions(state, s0, b)
        # no span involved: the arc preconditions and the chain's right head, inlined
        allowed = [SHIFT] if deps_done and self.may_shift[b] else []
        if heads[s0] == NO_HEAD:
            required = self.required_head[s0]
            if (required == NO_HEAD or required == b) and self.rightmost_dep[s0] < b:
                allowed.append(LEFT)
        elif self.rightmost_dep[s0] < b:
            allowed.append(REDUCE)
        required = self.required_head[b]
        if (required == NO_HEAD or required == s0) and deps_done and (
                self.chain_free[chain] or self._covered_chain_ok(state, chain, b)):
            allowed.append(RIGHT)
        return allowed

    def _checked_actions(self, state, s0: int, b0: int) -> list[str]:
        """The legal actions (``b0`` a word, ``s0`` on the stack) that pass
        the full checks."""
        allowed = [SHIFT] if self._shift_ok(state, b0) else []
        if state.heads[s0] == NO_HEAD:
            if self._left_ok(state, s0, b0):
                allowed.append(LEFT)
        elif self._reduce_ok(state, s0, b0):
            allowed.append(REDUCE)
        if self._right_ok(state, s0, b0):
            allowed.append(RIGHT)
        return allowed

    def forced_labels(self, state, actions: Sequence[str]) -> dict | None:
        """:meth:`ConstrainedSystem.forced_labels` with arc-eager's two arcs
        inlined (the decoder asks in every state it scores); the answer may
        also name an arc action that is not in ``actions``."""
        stack = state.stack
        if not stack:
            return None
        s0, b = stack[-1], state.b
        required, labels = self.required_head, self.required_label
        if b > self.n:
            return {LEFT: labels[s0]} if required[s0] == ROOT and labels[s0] is not None else None
        left = labels[s0] if required[s0] == b else None
        right = labels[b] if required[b] == s0 else None
        if left is None and right is None:
            return None
        return {LEFT: left, RIGHT: right}

    def _covered_chain_ok(self, state, chain: int, b0: int) -> bool:
        """:meth:`_has_right_head` of a chain bottom in no span, without a
        constrained head and under a constrained arc, once ``b0`` (in no span)
        joins its chain."""
        last = self.cover_end[chain]
        extent = max(state.extent[chain], self.reach_right[b0])
        return extent < last and self.outside_head_slots[last] > self.outside_head_slots[extent]

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        """The ``legal`` actions whose preconditions hold (:meth:`legal_actions`)."""
        ok = self.legal_actions(state)
        return [action for action in legal if action in ok]

    def apply(self, state, action: str, label: str | None = None) -> None:
        """The transition and its bookkeeping; a constrained arc gets its label
        (:meth:`ConstrainedSystem.apply` and :meth:`ArcEager.apply`, inlined:
        this runs once per transition)."""
        b, stack, span_of = state.b, state.stack, self.span_of
        if action == SHIFT:
            if span_of[b] >= 0:
                self._count_push(state, b, NO_HEAD)
            state.chain[b] = b
            state.extent[b] = self.reach_right[b]
            stack.append(b)
            state.b = b + 1
            return
        if action == RIGHT:
            s0 = stack[-1]
            if span_of[b] >= 0:
                self._count_push(state, b, s0)
            chain = state.chain[b] = state.chain[s0]
            if span_of[b] >= 0:
                state.extent[chain] = self._chain_extent(state, chain, b)
            elif self.reach_right[b] > state.extent[chain]:
                state.extent[chain] = self.reach_right[b]
            if span_of[s0] >= 0 or span_of[b] >= 0:
                self._note_link(state, s0, b)
            if self.required_head[b] == s0:
                label = self.required_label[b] or label
            state.add_arc(s0, b, label)
            stack.append(b)
            state.b = b + 1
            return
        if action == REDUCE:
            state.popped[stack.pop()] = 1
            return
        if action != LEFT:
            raise ValueError(f"arc-eager has no action {action!r}")
        s0 = stack.pop()
        state.popped[s0] = 1
        b0 = b if b <= self.n else ROOT  # span_of[ROOT] is -1: the root is in no span
        if span_of[s0] >= 0 and span_of[s0] == span_of[b0]:
            state.components -= 1
        if span_of[s0] >= 0 or span_of[b0] >= 0:
            self._note_link(state, b0, s0)
        if self.required_head[s0] == b0:
            label = self.required_label[s0] or label
        state.add_arc(b0, s0, label)

    def _count_push(self, state, word: int, head: int) -> None:
        span = self.span_of[word]
        if span < 0:
            return
        top = self._forced_top(state, word, head)
        if top != NO_HEAD:
            state.span_root[span] = top
        state.components = self._components_after_push(state, word, head)
        if head != NO_HEAD and self._span(head) == span:
            root = state.component[word] = state.component[head]
            state.reach[root] = max(state.reach[root], self.reach_right[word])
        else:
            state.component[word] = word
            state.reach[word] = self.reach_right[word]

    def _note_link(self, state, head: int, dep: int) -> None:
        """Record designated roots set by an arc that leaves a span."""
        sh, sd = self._span(head), self.span_of[dep]
        if sh == sd:
            return
        if sd >= 0:
            state.span_root[sd] = dep
        if sh >= 0 and self.spans[sh].outside == SPAN_ROOT_ONLY:
            state.span_root[sh] = head

    def satisfied_by(self, heads: Sequence[int]) -> bool:
        if not super().satisfied_by(heads):
            return False
        for i, s in enumerate(self.spans):
            tops = [w for w in range(s.first, s.last + 1) if self._span(heads[w]) != i]
            if len(tops) != 1:
                return False
            givers = {heads[d] for d in range(1, self.n + 1) if self._span(heads[d]) == i != self.span_of[d]}
            if s.outside == NONE_OUTSIDE and givers or s.outside == SPAN_ROOT_ONLY and givers - set(tops):
                return False
        return True

    def check_satisfiable(self) -> None:
        """One greedy run: the system is sound and complete, so it reaches a
        final state meeting the constraints iff some projective tree does.
        Disjoint spans alone (checked) always are: attach every span word to
        its span's last word and the other words to the root."""
        if not self.constraints.arcs:
            return
        state = self.initial_state()
        while not self.is_final(state):
            legal = self.legal_actions(state)
            if not legal:
                self.constraints.fail("no projective tree satisfies these constraints")
            self.apply(state, legal[0])
        if not self.satisfied_by(state.heads):
            self.constraints.fail("no projective tree satisfies these constraints")
