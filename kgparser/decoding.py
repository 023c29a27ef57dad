"""Greedy batched decoding: the decoder behind :class:`kgparser.parser.Parser`.

A batch of sentences is encoded with one BiLSTM call; all parser states then
advance in lock-step, every state that has a choice being scored by one MLP
call per step.  The output is always a valid UD tree (:func:`to_valid_tree`).

Runs of an arc-free action.  A system may name an action that adds no arc
(``chain_action``, e.g. Covington's No-Arc) and give the features of the
states a run of it reaches (``chain_features(state, count)``).  As no arc
changes along such a run, every state's rows are known in advance, so a
state that has just taken the action a few times in a row is scored together
with the states of the next run, as long again (up to a share of
:data:`AHEAD_ROWS_PER_CALL`), in the same MLP call; the decoder then walks the
run while the action stays the best one and stops at the first state where
another wins (applied there).  The decisions are those
of scoring one state at a time: the same rows, scored by the same network.
Covington makes O(n^2) transitions, mostly No-Arc, so this turns most of its
MLP calls on a long sentence into a few large ones.

Decoding constraints (:class:`DecodingConstraint`) filter the legal actions
of every state, walked ones included.  The decoder never falls back
silently: a filter that allows none of the legal actions is a
:class:`DecodingError`, and non-finite scores (a model with NaN or infinite
weights) a :class:`NonFiniteScores`.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import math
from typing import Callable, Sequence

import torch

from .constraints import ConstraintError, ConstraintFilter, forced_arc_labels
from .errors import KgparserError
from .model import CharTable, Model
from .model.features import flat_rows, positions_rows, state_rows
from .model.tagger import best_tags
from .tree_repair import loose_words, to_valid_tree

#: rows of states ahead on runs of the chain action that one MLP call may score, shared
#: by the live sentences: the lookahead saves the fixed cost of MLP calls, which many live
#: sentences share anyway, and wastes the rows after a run's end
AHEAD_ROWS_PER_CALL = 256
#: batches whose character vectors are computed together (each distinct form once)
CHAR_TABLE_BATCHES = 32


class DecodingError(KgparserError):
    """Decoding a sentence failed (e.g. a decoding constraint allowed none of
    a state's legal actions); ``index`` is the sentence's position in the
    decoded list."""

    def __init__(self, index: int, problem: str, where: str | None = None):
        super().__init__(f"{where or f'sentence {index + 1}'}: {problem}")
        self.index, self.problem = index, problem


class NonFiniteScores(DecodingError):
    """The model scored a state NaN or infinite: its weights are not finite."""

    PROBLEM = ("the model's transition scores are not finite (NaN or inf): its weights are not finite, so the "
               "checkpoint is damaged, e.g. by diverged training; retrain with a lower learning rate")

    def __init__(self, index: int, problem: str = PROBLEM, where: str | None = None):
        super().__init__(index, problem, where)


class DecodingConstraint:
    """Restricts the decoder for one sentence; subclass and override either method."""

    def allowed_actions(self, state, legal_actions: list[str]) -> list[str]:
        """The subset of ``legal_actions`` the decoder may take in ``state``."""
        return legal_actions

    def forced_label(self, head: int, dependent: int) -> str | None:
        """The label the arc ``head -> dependent`` must carry, or None to let the model choose."""
        return None

    #: a system that builds and advances this sentence's states in place of the
    #: model's (same actions, states of a subclass), or None
    state_system = None

    def preferred_roots(self, top: list[int]) -> list[int]:
        """Of the words a final state attaches to the root (``top``), those that
        should become the sentence's only root, best first (the others are then
        attached to it by :func:`to_valid_tree`)."""
        return []


class _FilterConstraint(DecodingConstraint):
    def __init__(self, function: Callable):
        self.function = function

    def allowed_actions(self, state, legal_actions):
        return self.function(state, legal_actions)


class _SpanArcConstraint(DecodingConstraint):
    """:class:`~kgparser.constraints.Constraints` of one sentence as a decoding
    constraint: the actions of its filter, its forced labels, and a root
    choice that keeps the arc and span constraints when a final state has
    several root dependents."""

    def __init__(self, constraints, constraint_filter):
        self.constraints = constraints
        self.filter = constraint_filter
        #: the satisfiability of the constraints is left to the decoder's run (see ``_BatchDecoder``)
        self.unchecked = not constraint_filter.satisfiable_checked
        if constraint_filter.follows_states:
            # The decoder's states can carry the span bookkeeping themselves,
            # which spares the filter's shadow state (each transition applied
            # once), and the system filters its legal actions as it finds them.
            # The decoder makes these objects per batch, so the system's
            # per-word tables go with the batch.
            self.state_system = constraint_filter.decoding_system()
            self.forced_label = self.state_system.forced_label  # spares a call
        else:
            self.forced_label = constraint_filter.constrained.forced_label

    def allowed_actions(self, state, legal_actions):
        if self.state_system is None:
            return self.filter.allowed_actions(state, legal_actions)
        return self.state_system.allowed(state, legal_actions)

    def preferred_roots(self, top):
        """The word constrained to hang from the root, else the root dependents
        outside every span that forbids outside dependents (attaching the other
        root dependents to a word of such a span would break it)."""
        required = [a.dep for a in self.constraints.arcs if a.head == 0 and a.dep in top]
        closed = [s for s in self.constraints.spans if s.outside == "none"]
        if not closed:
            return required + top
        open_top = [d for d in top if not any(s.first <= d <= s.last for s in closed)]
        return required + open_top


def _as_constraint(entry) -> DecodingConstraint | None:
    if entry is None or isinstance(entry, DecodingConstraint):
        return entry
    if isinstance(entry, ConstraintFilter):
        return _SpanArcConstraint(entry.constraints, entry)
    if callable(entry):
        return _FilterConstraint(entry)
    raise TypeError(f"a constraint must be None, a callable or a DecodingConstraint, not {type(entry).__name__}")


@contextlib.contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector while decoding: the decoder
    allocates many short-lived acyclic objects (states, lists) that reference
    counting frees anyway, and the full collections they trigger cost up to a
    sixth of the parse time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode(model: Model, sentences: Sequence, batch_size: int = 64, constraints: Sequence | None = None,
           unsatisfiable: list | None = None, tags: list | None = None,
           root_choice: str | None = None) -> list[tuple[list[int], list[str | None]]]:
    """Greedy parses (valid trees) of ``sentences``, in their order.  With
    ``tags`` (a list as long as ``sentences``), the joint tagger's best tags of
    each sentence (a dict per predicted column) are put there, from the same
    BiLSTM pass.  ``root_choice``: how the loose words of a final state are
    repaired (:mod:`kgparser.tree_repair`; default the model's ``model.root_choice``);
    a sentence with a decoding constraint is repaired by position (``first``,
    the constraint's root preferred), which keeps its constraints.

    Constraints whose satisfiability was left to the decoder (filters made
    with ``check_satisfiable=False``) that no tree satisfies are dropped and
    their sentence decoded again without them: its position is appended to
    ``unsatisfiable``, or, without that list, a :class:`ConstraintError` is raised."""
    results: list = [None] * len(sentences)
    choice = root_choice or model.config.model.root_choice
    order = sorted(range(len(sentences)), key=lambda i: sentences[i].n)
    # the character vectors of CHAR_TABLE_BATCHES batches' distinct forms are computed
    # at once: a form that several batches share costs one character BiLSTM pass
    table_span, char_table = batch_size * CHAR_TABLE_BATCHES, None
    network = model.network
    was_training = network.training
    network.eval()
    try:
        with torch.no_grad(), _collector_paused():
            for start in range(0, len(order), batch_size):
                chosen = order[start:start + batch_size]
                if start % table_span == 0 and model.config.model.char_dim:
                    char_table = model.inputs.char_table([sentences[i] for i in order[start:start + table_span]])
                batch_constraints = [_as_constraint(constraints[i]) for i in chosen] if constraints else None
                trees, batch_tags, failed = _decode_batch(model, sentences, chosen, batch_constraints, choice,
                                                          tags is not None, char_table)
                for j in failed:
                    if unsatisfiable is None:
                        raise ConstraintError(f"sentence {chosen[j] + 1}: no projective tree satisfies "
                                              f"its constraints")
                    unsatisfiable.append(chosen[j])
                for j, i in enumerate(chosen):
                    results[i] = trees[j]
                    if tags is not None:
                        tags[i] = batch_tags[j]
    finally:
        network.train(was_training)
    return results


def _decode_batch(model: Model, sentences: Sequence, chosen: list[int], constraints: list | None, choice: str,
                  with_tags: bool, char_table) -> tuple[list, list, list[int]]:
    """The valid trees of the sentences at positions ``chosen`` (in that order),
    their predicted tags, and the batch positions whose constraints no tree satisfies."""
    failed: list[int] = []
    decoder = _BatchDecoder(model, [sentences[i] for i in chosen], constraints, failed,
                            with_tags=with_tags, char_table=char_table)
    try:
        states = decoder.run()
    except DecodingError as error:
        raise type(error)(chosen[error.index], error.problem) from None
    probed = decoder.arc_scores() if choice == "scored" else [None] * len(states)
    trees = []
    for j, state in enumerate(states):
        constraint = constraints[j] if constraints else None
        if constraint is not None:
            trees.append(to_valid_tree(state.heads, state.labels, constraint.preferred_roots,
                                       "first" if choice == "scored" else choice))
        else:
            trees.append(to_valid_tree(state.heads, state.labels, None, choice, probed[j]))
    return trees, decoder.tags, failed


class _BatchDecoder:
    """Final states of one batch (:meth:`run`).  A sentence whose unchecked
    constraints prove unsatisfiable (stuck, or a final state that misses them)
    is appended to ``failed`` and restarts without them (``constraints`` is
    updated)."""

    def __init__(self, model: Model, sentences: Sequence, constraints: list | None, failed: list,
                 with_tags: bool = False, char_table: CharTable | None = None):
        system = model.system
        self.char_table = char_table
        self.with_tags, self.tags = with_tags, None
        self.model, self.system, self.sentences = model, system, sentences
        self.constraints, self.failed = constraints, failed
        self.owners = [c.state_system if c is not None and c.state_system is not None else system
                       for c in constraints] if constraints else [system] * len(sentences)
        self.states = _initial_states(system, sentences, self.owners)
        self.allowed_in = ([_allowed_actions_function(system, c) for c in constraints] if constraints
                           else [system.legal_actions] * len(sentences))
        self.forced_in = ([_forced_labels_function(system, c) for c in constraints] if constraints
                          else [None] * len(sentences))
        self.chain_action = getattr(system, "chain_action", None)
        #: per sentence, how many chain actions its state has just taken in a row
        self.runs = [0] * len(sentences)

    def run(self) -> list:
        system, states = self.system, self.states
        live = [i for i, state in enumerate(states) if not system.is_final(state)]
        if not live and not self.with_tags:
            return states
        network = self.model.network
        inputs = self.model.inputs(self.sentences, char_table=self.char_table)
        self.offsets, self.pad = inputs["offsets"], inputs["pad_row"]
        vectors, tag_scores = network.encode_all(inputs, with_tags=self.with_tags)
        if self.with_tags:
            self.tags = best_tags(self.model, tag_scores, self.sentences)
        self.projected = network.project(vectors)
        while live:
            self._step(live)
            if self.constraints:
                live = [i for i in live if not system.is_final(states[i]) or self._restarted(i)]
            else:
                live = [i for i in live if not system.is_final(states[i])]
        return states

    def arc_scores(self) -> list:
        """Per sentence of the batch, the network's scores of the attachments of
        its final state's loose words to every other word (and to the root where
        the system has root arcs): dependent -> ``[(score, head, label)]``, best
        first (:data:`kgparser.tree_repair.ArcScores`), each scored as the arc
        action of the system's :meth:`arc_probe` configuration with its best
        label; ``None`` for a sentence with fewer than two loose words, with a
        decoding constraint, or whose system has no probes.  One MLP call."""
        model, system = self.model, self.system
        if not system.has_arc_probes:
            return [None] * len(self.states)
        rows, probes = [], []  # probes: (sentence, dependent, head, action) of each row block
        for i, state in enumerate(self.states):
            loose = loose_words(state.heads)
            if len(loose) < 2 or (self.constraints and self.constraints[i] is not None):
                continue
            for d in loose:
                for h in range(len(state.heads)):
                    probe = system.arc_probe(state, h, d) if h != d else None
                    if probe is not None:
                        positions_rows((probe[0],), state, self.offsets[i], self.pad, rows)
                        probes.append((i, d, h, probe[1]))
        found: list = [None] * len(self.states)
        if not probes:
            return found
        scores = _StepScores(model, model.network.hidden(self.projected, flat_rows(model, rows, len(probes))))
        for row, (i, d, h, action) in enumerate(probes):
            label = model.labels[scores.best_labels[row][model.arc_slot[action]]] if scores.n_labels else None
            found[i] = found[i] or {}
            found[i].setdefault(d, []).append((scores.totals[row][model.action_id[action]], h, label))
        for attachments in filter(None, found):
            for options in attachments.values():
                options.sort(key=lambda option: option[0], reverse=True)
        return found

    def _step(self, live: list) -> None:
        """Advance every live state: alone where it has no choice, else after
        one MLP call that scores all of them (and the runs ahead, see the
        module docstring)."""
        model, states, owners, arc_actions = self.model, self.states, self.owners, self.model.arc_actions
        scored, rows, legal_sets, aheads = [], [], [], []
        cap = AHEAD_ROWS_PER_CALL // len(live) if self.chain_action else 0
        for i in live:
            state = states[i]
            legal = self.allowed_in[i](state)
            if not legal:
                _check_stuck(self.system, state, i, self.constraints)  # raises unless unsatisfiable
                self._restart_without_constraints(i)
                continue
            if len(legal) == 1 and legal[0] not in arc_actions:
                owners[i].apply(state, legal[0])
                continue
            scored.append(i)
            legal_sets.append(legal)
            state_rows(model, state, self.offsets[i], self.pad, rows)
            aheads.append(self._rows_ahead(i, legal, rows, cap) if cap else 0)
        if not scored:
            return
        scores = _StepScores(model, model.network.hidden(self.projected, flat_rows(model, rows,
                                                                                  len(rows) // model.n_slots)))
        bad = scores.non_finite_row()
        if bad is not None:
            raise NonFiniteScores(_owner_of_row(bad, scored, aheads))
        row = 0
        for i, legal, ahead in zip(scored, legal_sets, aheads):
            self._walk(i, legal, scores, row, ahead)
            row += 1 + ahead

    def _rows_ahead(self, i: int, legal: list, rows: list, cap: int) -> int:
        """Append the rows of the states the next run of chain actions would
        reach, as many as the state has just taken in a row (so the lookahead
        doubles along a long run and costs nothing after other actions), at
        most ``cap`` (its share of :data:`AHEAD_ROWS_PER_CALL`); returns how many."""
        count = min(self.runs[i], cap)
        if not count or self.chain_action not in legal:
            return 0
        state = self.states[i]
        ahead = self.system.chain_features(state, count)
        positions_rows(ahead, state, self.offsets[i], self.pad, rows)
        return len(ahead)

    def _walk(self, i: int, legal: list, scores: "_StepScores", row: int, ahead: int) -> None:
        """Apply the best action of sentence ``i``'s state (``row``); while it is
        the chain action, go on with the next state of the run (rows ``row + 1``
        ... ``row + ahead``), chosen among its own allowed actions exactly as the
        next step would (a state with one allowed action gets it, as there).  A
        state where no action is allowed is left to the next step, which says why."""
        state, apply, allowed, forced = self.states[i], self.owners[i].apply, self.allowed_in[i], self.forced_in[i]
        chain_action, choose = self.chain_action, scores.choose
        for k in range(ahead + 1):
            if k:
                legal = allowed(state)
                if not legal:
                    return
            action, label = choose(row + k, state, legal, forced)
            apply(state, action, label)
            if action != chain_action:
                self.runs[i] = 0
                return
            self.runs[i] += 1

    def _restarted(self, i: int) -> bool:
        """Whether the final state of sentence ``i`` misses its unchecked
        constraints, which restarts the sentence without them."""
        constraint = self.constraints[i]
        if constraint is None or not getattr(constraint, "unchecked", False) \
                or constraint.state_system.satisfied_by(self.states[i].heads):
            return False
        self._restart_without_constraints(i)
        return True

    def _restart_without_constraints(self, i: int) -> None:
        """Drop the constraints of sentence ``i`` (noted in ``failed``) and start it
        again from a plain state."""
        system = self.system
        self.failed.append(i)
        self.owners[i], self.constraints[i] = system, None
        self.allowed_in[i], self.forced_in[i] = system.legal_actions, None
        self.states[i] = system.initial_state(self.sentences[i].n)
        self.runs[i] = 0


def _owner_of_row(row: int, scored: list, aheads: list) -> int:
    """The sentence whose state (or run ahead) is ``row`` of a step's MLP call."""
    end = 0
    for i, ahead in zip(scored, aheads):
        end += 1 + ahead
        if row < end:
            return i
    raise IndexError(row)


class _StepScores:
    """The scores of one MLP call.  As a labeled transition scores action +
    label, each arc action's best label is found in torch for all rows at
    once; only the choice among a state's few legal actions is made in Python
    (:meth:`choose`)."""

    def __init__(self, model: Model, hidden: torch.Tensor):
        self.model = model
        self.n_labels = n_labels = len(model.labels)
        action_scores, self.label_scores = model.network.head_scores(hidden)
        if n_labels:
            per_action = self.label_scores[:, :len(model.arc_action_ids) * n_labels].view(len(hidden), -1, n_labels)
            best_label_scores, best_labels = per_action.max(2)  # NaN wins max, so it shows in the totals
            action_scores = action_scores.index_add(1, model.arc_action_index, best_label_scores)
            self.best_labels = best_labels.tolist()
        self.totals = action_scores.tolist()
        self.label_rows = None  # the label scores as a NumPy array, made for the first forced label

    def non_finite_row(self) -> int | None:
        """The first row with a NaN or infinite score, or None.  Checked on the
        Python floats: a sum is finite iff its terms are (short of an overflow
        no working model comes near), and this costs less than a torch call
        on a step's few rows."""
        totals = self.totals
        if math.isfinite(sum(map(sum, totals))):
            return None
        return next(row for row, scores in enumerate(totals) if not math.isfinite(sum(scores)))

    def choose(self, row: int, state, legal: list, forced_labels: Callable | None) -> tuple[str, str | None]:
        """The best legal (action, label) of the state scored in ``row``.
        ``forced_labels``: ``None`` or a function ``(state, legal actions) ->
        {arc action: forced label} or None`` (see :func:`_forced_labels_function`)."""
        model = self.model
        scores, action_id, arc_actions = self.totals[row], model.action_id, model.arc_actions
        best_labels = self.best_labels[row] if self.n_labels else None
        forced_here = forced_labels(state, legal) if forced_labels else None
        best, best_label, best_score = None, None, -math.inf
        for action in legal:
            score = scores[action_id[action]]
            label = None
            if best_labels is not None and action in arc_actions:
                forced = forced_here.get(action) if forced_here else None
                if forced is None:
                    label = model.labels[best_labels[model.arc_slot[action]]]
                else:
                    label, score = self._forced(row, action, score, forced)
            if score > best_score:
                best, best_label, best_score = action, label, score
        return best, best_label

    def _forced(self, row: int, action: str, score: float, forced: str) -> tuple[str, float]:
        """``forced`` as the label of ``action``'s arc and the transition's
        score with it in place of the best label, when the model knows it."""
        model, n_labels = self.model, self.n_labels
        slot = model.arc_slot[action]
        best = self.best_labels[row][slot]
        known = model.label_id.get(forced)
        if known is not None:  # rescore with the forced label instead of the best one
            if self.label_rows is None:
                self.label_rows = self.label_scores.cpu().numpy()
            row_scores = self.label_rows[row]  # the difference in float32, as torch makes it
            score += float(row_scores[slot * n_labels + known] - row_scores[slot * n_labels + best])
        return forced, score


def _initial_states(system, sentences: Sequence, owners: list) -> list:
    """The initial state of each sentence from its owner; where constrained
    systems own some, the unconstrained sentences get states of the same class
    when the system can make them (``unconstrained_state``), which keeps the
    decoder's attribute lookups specialized to one class."""
    constrained = next((owner for owner in owners if owner is not system), None)
    plain_state = getattr(constrained, "unconstrained_state", None) or system.initial_state
    return [plain_state(s.n) if owner is system else owner.initial_state(s.n) for owner, s in zip(owners, sentences)]


def _allowed_actions_function(system, constraint) -> Callable:
    """``state -> the actions the decoder may take`` for one sentence: the
    system's legal actions filtered by ``constraint``, in one call where the
    constraint's system finds them already filtered."""
    if constraint is None:
        return system.legal_actions
    if isinstance(constraint, _SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.legal_actions
    legal_actions, allowed_actions = system.legal_actions, constraint.allowed_actions

    def allowed(state):
        legal = legal_actions(state)
        return allowed_actions(state, legal) if legal else legal

    return allowed


def _forced_labels_function(system, constraint) -> Callable | None:
    """``(state, legal actions) -> {arc action: label the constraint forces on
    its arc}`` or ``None`` (none forced) for one sentence, one call per state;
    ``None`` without a constraint."""
    if constraint is None:
        return None
    if isinstance(constraint, _SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.forced_labels
    return functools.partial(forced_arc_labels, constraint.forced_label, system.arc_of, system.arc_actions)


def _check_stuck(system, state, i: int, constraints: list | None) -> None:
    """A non-final state of sentence ``i`` where the decoder may take no
    action: a broken system or decoding constraint raises; only unchecked
    constraints that no tree satisfies return (the sentence then restarts)."""
    legal = system.legal_actions(state)
    if not legal:
        raise RuntimeError(f"{system!r}: a non-final state has no legal action")
    if not getattr(constraints[i], "unchecked", False):
        raise DecodingError(i, f"the decoding constraint allows none of the legal actions {legal}")
