"""Greedy batched decoding: the decoder behind :class:`kgparser.inference.parser.Parser`.

A batch of sentences is encoded with one BiLSTM call; all parser states then
advance in lock-step (:class:`~kgparser.model.stepper.Stepper`, shared with the
trainer), every state that has a choice being scored by one MLP call per step
and given the best label of each action.  The output is always a valid UD
tree (:func:`~kgparser.inference.tree_repair.to_valid_tree`).

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

Decoding constraints
(:class:`~kgparser.inference.decoding_constraints.DecodingConstraint`) filter the legal actions
of every state, walked ones included.  The decoder never falls back
silently: a filter that allows none of the legal actions is a
:class:`DecodingError`, and non-finite scores (a model with NaN or infinite
weights) a :class:`NonFiniteScores`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, cast

import torch

from ..errors import KgparserError
from ..io.collector import collector_paused
from ..model import CharTable, Model
from ..model.features import flat_rows, positions_rows
from ..model.inputs import PARSE_CACHE_SENTENCES
from ..model.stepper import Step, Stepper, no_action_error
from ..model.tagger import best_tags
from .decoding_constraints import allowed_actions_function, as_constraint, forced_labels_function
from .tree_repair import loose_words, to_valid_tree

if TYPE_CHECKING:
    import numpy as np

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


@dataclass
class Decoded:
    """What :func:`decode` gives: per sentence, in input order, its valid tree
    ``(heads, labels)`` and (when asked for) the joint tagger's best tags (a dict
    per predicted column); and the positions of the sentences whose constraints
    no tree satisfies (decoded again without them)."""

    trees: list
    tags: list | None
    unsatisfiable: list[int]


def decode(model: Model, sentences: Sequence, batch_size: int = 64, constraints: Sequence | None = None,
           with_tags: bool = False, root_choice: str | None = None) -> Decoded:
    """Greedy parses (valid trees) of ``sentences``; with ``with_tags``, the joint
    tagger's best tags too, from the same BiLSTM pass.  ``root_choice``: how the
    loose words of a final state are repaired (:mod:`kgparser.inference.tree_repair`;
    default the model's ``decoding.root_choice``); a sentence with a decoding
    constraint is repaired by position (``first``, the constraint's root
    preferred), which keeps its constraints.

    Constraints whose satisfiability was left to the decoder (filters made
    with ``check_satisfiable=False``) that no tree satisfies are dropped and
    their sentence decoded again without them: its position is in the
    result's ``unsatisfiable``, for the caller to report."""
    trees: list = [None] * len(sentences)
    tags: list | None = [None] * len(sentences) if with_tags else None
    unsatisfiable: list[int] = []
    choice = root_choice or model.config.decoding.root_choice
    order = sorted(range(len(sentences)), key=lambda i: sentences[i].n)
    # the character vectors of CHAR_TABLE_BATCHES batches' distinct forms are computed
    # at once: a form that several batches share costs one character BiLSTM pass
    table_span, char_table = batch_size * CHAR_TABLE_BATCHES, None
    states_span = batch_size * max(1, PARSE_CACHE_SENTENCES // batch_size)
    network = model.network
    was_training = network.training
    network.eval()
    try:
        with torch.no_grad(), collector_paused():
            for start in range(0, len(order), batch_size):
                chosen = order[start:start + batch_size]
                if start % table_span == 0 and model.config.model.char_dim:
                    char_table = model.inputs.char_table([sentences[i] for i in order[start:start + table_span]])
                if start % states_span == 0:
                    model.inputs.states_ahead([sentences[i] for i in order[start:start + states_span]])
                batch_constraints = [as_constraint(constraints[i]) for i in chosen] if constraints else None
                batch = _decode_batch(model, sentences, chosen, batch_constraints, choice, with_tags, char_table)
                unsatisfiable.extend(chosen[j] for j in batch.unsatisfiable)
                for j, i in enumerate(chosen):
                    trees[i] = batch.trees[j]
                    if tags is not None:
                        assert batch.tags is not None  # asked for (with_tags)
                        tags[i] = batch.tags[j]
    finally:
        network.train(was_training)
    return Decoded(trees, tags, unsatisfiable)


def _decode_batch(model: Model, sentences: Sequence, chosen: list[int], constraints: list | None, choice: str,
                  with_tags: bool, char_table) -> Decoded:
    """The :class:`Decoded` of the sentences at positions ``chosen`` (in that
    order; ``unsatisfiable`` holds positions in the batch)."""
    decoder = _BatchDecoder(model, [sentences[i] for i in chosen], constraints, with_tags=with_tags,
                            char_table=char_table)
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
    return Decoded(trees, decoder.tags, decoder.failed)


class _BatchDecoder:
    """Final states of one batch (:meth:`run`), chosen for the batch's
    :class:`~kgparser.model.stepper.Stepper` (:class:`~kgparser.model.stepper.Chooser`).  A
    sentence whose unchecked constraints prove unsatisfiable (stuck, or a final
    state that misses them) is appended to ``failed`` and restarts without them
    (``constraints`` is updated)."""

    def __init__(self, model: Model, sentences: Sequence, constraints: list | None, with_tags: bool = False,
                 char_table: CharTable | None = None):
        system = model.system
        self.char_table = char_table
        self.with_tags = with_tags
        self.tags: list[dict[str, list[str]]] | None = None
        self.model, self.system, self.sentences = model, system, sentences
        self.inventory = model.inventory
        self.constraints = constraints
        self.failed: list[int] = []
        if constraints:
            owners = [c.state_system if c is not None and c.state_system is not None else system
                      for c in constraints]
            allowed = [allowed_actions_function(system, c) for c in constraints]
            self.forced_in = [forced_labels_function(system, c) for c in constraints]
        else:
            owners, allowed, self.forced_in = None, None, [None] * len(sentences)
        self.stepper = Stepper(model, sentences, owners, allowed)
        self.states = self.stepper.states
        self.chain_action = getattr(system, "chain_action", None)
        #: per sentence, how many chain actions its state has just taken in a row
        self.runs = [0] * len(sentences)
        #: per scored state of the current step: how many rows ahead follow its own
        self.aheads: list[int] = []

    def run(self) -> list:
        if not self.stepper.live() and not self.with_tags:
            return self.states
        batch = self.model.inputs(self.sentences, char_table=self.char_table, round_width=True)
        encoded = self.model.encode(batch, with_tags=self.with_tags)
        self.offsets, self.pad, self.projected = batch.offsets, batch.pad_row, encoded.projected
        if self.with_tags:
            self.tags = best_tags(self.model, encoded.tag_scores, self.sentences, encoded.lemma_inputs)
        return self.stepper.run(self, encoded)

    # -- the stepper's chooser ----------------------------------------------------------

    def consider(self, step: Step, i: int, state, legal: list) -> None:
        """Add the rows of the run ahead of the state (see the module docstring)."""
        cap = AHEAD_ROWS_PER_CALL // len(step.live) if self.chain_action else 0
        self.aheads.append(self._rows_ahead(i, legal, step.rows, cap) if cap else 0)

    def decide(self, step: Step, rows: torch.Tensor, hidden: torch.Tensor) -> None:
        scores, aheads = _StepScores(self.model, hidden), self.aheads
        self.aheads = []
        bad = scores.non_finite_row()
        if bad is not None:
            raise NonFiniteScores(_owner_of_row(bad, step.scored, aheads))
        row = 0
        for i, legal, ahead in zip(step.scored, step.legal, aheads):
            self._walk(i, legal, scores, row, ahead)
            row += 1 + ahead

    def stuck(self, i: int, state) -> None:
        """A non-final state where the decoder may take no action: a broken
        system or decoding constraint raises; only unchecked constraints that
        no tree satisfies restart the sentence without them."""
        legal = self.system.legal_actions(state)
        if not legal:
            raise no_action_error(self.system)
        assert self.constraints is not None  # only a constraint allows none of the legal actions
        if not getattr(self.constraints[i], "unchecked", False):
            raise DecodingError(i, f"the decoding constraint allows none of the legal actions {legal}")
        self._restart_without_constraints(i)

    def restarts(self, i: int) -> bool:
        """Whether the final state of sentence ``i`` misses its unchecked
        constraints, which restarts the sentence without them."""
        constraint = self.constraints[i] if self.constraints else None
        if constraint is None or not getattr(constraint, "unchecked", False) \
                or constraint.state_system.satisfied_by(self.states[i].heads):
            return False
        self._restart_without_constraints(i)
        return True

    # -- ----------------------------------------------------------------------------------

    def arc_scores(self) -> list:
        """Per sentence of the batch, the network's scores of the attachments of
        its final state's loose words to every other word (and to the root where
        the system has root arcs): dependent -> ``[(score, head, label)]``, best
        first (:data:`kgparser.inference.tree_repair.ArcScores`), each scored as the arc
        action of the system's :meth:`arc_probe` configuration with its best
        label; ``None`` for a sentence with fewer than two loose words, with a
        decoding constraint, or whose system has no probes.  One MLP call."""
        model, system, inventory = self.model, self.system, self.inventory
        if not system.has_arc_probes:
            return [None] * len(self.states)
        rows: list[int] = []
        probes: list[tuple[int, int, int, str]] = []  # (sentence, dependent, head, action) of each row block
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
            label = inventory.labels[scores.best_labels[row][inventory.arc_slot[action]]] if scores.n_labels else None
            found[i] = found[i] or {}
            found[i].setdefault(d, []).append((scores.totals[row][inventory.action_id[action]], h, label))
        for attachments in filter(None, found):
            for options in attachments.values():
                options.sort(key=lambda option: option[0], reverse=True)
        return found

    def _rows_ahead(self, i: int, legal: list, rows: list, cap: int) -> int:
        """Append the rows of the states the next run of chain actions would
        reach, as many as the state has just taken in a row (so the lookahead
        doubles along a long run and costs nothing after other actions), at
        most ``cap`` (its share of :data:`AHEAD_ROWS_PER_CALL`); returns how many."""
        count = min(self.runs[i], cap)
        if not count or self.chain_action not in legal:
            return 0
        state = self.states[i]
        ahead = cast(_ChainSystem, self.system).chain_features(state, count)  # a system with a chain action
        positions_rows(ahead, state, self.offsets[i], self.pad, rows)
        return len(ahead)

    def _walk(self, i: int, legal: list, scores: _StepScores, row: int, ahead: int) -> None:
        """Apply the best action of sentence ``i``'s state (``row``); while it is
        the chain action, go on with the next state of the run (rows ``row + 1``
        ... ``row + ahead``), chosen among its own allowed actions exactly as the
        next step would (a state with one allowed action gets it, as there).  A
        state where no action is allowed is left to the next step, which says why."""
        stepper = self.stepper
        state, apply, allowed, forced = self.states[i], stepper.owners[i].apply, stepper.allowed[i], self.forced_in[i]
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

    def _restart_without_constraints(self, i: int) -> None:
        """Drop the constraints of sentence ``i`` (noted in ``failed``) and start it
        again from a plain state."""
        self.failed.append(i)
        assert self.constraints is not None  # a sentence restarts only without its constraints
        self.constraints[i], self.forced_in[i] = None, None
        self.stepper.restart(i)
        self.runs[i] = 0


class _ChainSystem(Protocol):
    """A system with a chain action (Covington's No-Arc): the features of the
    states a run of it reaches."""

    def chain_features(self, state: Any, count: int) -> list[list[int]]: ...


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
        self.inventory = inventory = model.inventory
        self.n_labels = n_labels = len(inventory.labels)
        action_scores, self.label_scores = model.network.head_scores(hidden)
        if n_labels:
            per_action = self.label_scores[:, :len(inventory.arc_action_ids) * n_labels].view(len(hidden), -1,
                                                                                             n_labels)
            best_label_scores, best_labels = per_action.max(2)  # NaN wins max, so it shows in the totals
            action_scores = action_scores.index_add(1, inventory.arc_action_index, best_label_scores)
            self.best_labels = best_labels.tolist()
        self.totals = action_scores.tolist()
        #: the label scores as a NumPy array, made for the first forced label
        self.label_rows: np.ndarray | None = None

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
        {arc action: forced label} or None`` (see
        :func:`~kgparser.inference.decoding_constraints.forced_labels_function`)."""
        inventory = self.inventory
        scores, action_id, arc_actions = self.totals[row], inventory.action_id, inventory.arc_actions
        best_labels = self.best_labels[row] if self.n_labels else None
        forced_here = forced_labels(state, legal) if forced_labels else None
        best, best_label, best_score = None, None, -math.inf
        for action in legal:
            score = scores[action_id[action]]
            label = None
            if best_labels is not None and action in arc_actions:
                forced = forced_here.get(action) if forced_here else None
                if forced is None:
                    label = inventory.labels[best_labels[inventory.arc_slot[action]]]
                else:
                    label, score = self._forced(row, action, score, forced)
            if score > best_score:
                best, best_label, best_score = action, label, score
        assert best is not None  # ``legal`` is not empty and the scores are finite (non_finite_row)
        return best, best_label

    def _forced(self, row: int, action: str, score: float, forced: str) -> tuple[str, float]:
        """``forced`` as the label of ``action``'s arc and the transition's
        score with it in place of the best label, when the model knows it."""
        inventory, n_labels = self.inventory, self.n_labels
        slot = inventory.arc_slot[action]
        best = self.best_labels[row][slot]
        known = inventory.label_id.get(forced)
        if known is not None:  # rescore with the forced label instead of the best one
            if self.label_rows is None:
                self.label_rows = self.label_scores.cpu().numpy()
            row_scores = self.label_rows[row]  # the difference in float32, as torch makes it
            score += float(row_scores[slot * n_labels + known] - row_scores[slot * n_labels + best])
        return forced, score
