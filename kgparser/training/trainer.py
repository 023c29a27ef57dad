"""Batched training with static or dynamic oracles and error exploration
(Kiperwasser & Goldberg 2016, section 3; Goldberg & Nivre 2013, section 4).

One batch: the BiLSTM reads all sentences at once and every first-layer slot
projection is computed once (:meth:`Network.project`); the parser states then
advance in lock-step, the states with a choice being scored together by one
MLP call per step on detached projections.  Each state's hinge term
``max(0, margin - best correct + best wrong)`` is recorded where positive, and
one final MLP call with gradients over the recorded states gives the batch
loss (identical to summing the per-step losses, with a single backward).

Correct transitions: ``static`` -- the static oracle's action with the gold
label; ``dynamic`` -- every legal action of least cost (zero for trees the
system can build; with a system's ``tie_break`` or ``regularize_switch``
option, ``costs()`` adds 1 to the zero-cost actions it does not prefer, so
the least-cost ones are the preferred subset), arcs with the gold label of
their dependent;
``static-dynamic`` -- when the static oracle picks one of the system's
``static_actions`` that action alone, else the least-cost actions other than
those (which are never followed by exploration).
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from ..config import Config
from ..errors import KgparserError
from ..model import Model
from ..model.tagger import tag_targets, tagging_loss
from ..model.features import flat_rows, state_rows
from .averaging import WeightAverage
from .exploration import ExplorationPolicy

STATIC, DYNAMIC, STATIC_DYNAMIC = "static", "dynamic", "static-dynamic"
#: a batch whose hinge loss per scored decision exceeds this many margins has
#: diverged (see :func:`check_loss_bound`)
EXPLODED_LOSS_MARGINS = 1000


class Diverged(KgparserError):
    """Training produced non-finite scores or loss (the weights are no longer
    usable); raised before the optimizer applies a non-finite update."""


@dataclass
class Example:
    """A training sentence with its gold tree."""

    sentence: object
    heads: list[int]
    labels: list[int]
    buildable: bool


@dataclass
class EpochStats:
    loss: float = 0.0
    scored: int = 0
    transitions: int = 0
    wrong_followed: int = 0
    tokens: int = 0
    oracle_seconds: float = 0.0
    oracle_fallbacks: int = 0
    cpu_seconds: float = 0.0
    sentences: int = 0
    #: the joint tagger's cross-entropy summed over the words it scored (``tagged``)
    tag_loss: float = 0.0
    tagged: int = 0

    def add(self, other: "EpochStats") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summed_over_processes(self) -> "EpochStats":
        """The statistics of all data-parallel processes together."""
        from .distributed import sum_over_processes

        names = list(self.__dataclass_fields__)
        sums = sum_over_processes([float(getattr(self, name)) for name in names])
        return EpochStats(**{name: type(getattr(self, name))(value) for name, value in zip(names, sums)})


def check_loss_bound(loss_per_decision: float, margin: float) -> None:
    """Raise :class:`Diverged` when a batch's hinge loss per scored decision
    has exploded.  An untrained model scores every transition near zero (a
    tanh hidden layer under small output weights), so it starts at about
    ``margin`` per decision and training keeps it of that order; a decision costs
    ``margin`` plus how far the best wrong score passes the best correct one,
    so a mean of ``EXPLODED_LOSS_MARGINS`` margins (at least 1 each: margin 0
    starts near 0) means scores thousands of margins apart, i.e. weights blown
    up by too high a learning rate, long before they overflow to inf."""
    bound = EXPLODED_LOSS_MARGINS * max(margin, 1.0)
    if loss_per_decision > bound:
        raise Diverged(f"the training loss exploded to {loss_per_decision:.3g} per decision (an untrained model "
                       f"starts near the margin, {margin:g}; the bound is {bound:g})")


def _adam(params, lr: float, betas: tuple[float, float]) -> torch.optim.Adam:
    """Adam with the fused kernel where torch has one (about 8x faster on CPU than
    the per-tensor loop: the dense embedding tables are updated every batch)."""
    try:
        return torch.optim.Adam(params, lr=lr, betas=betas, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params, lr=lr, betas=betas, foreach=True)


class Trainer:
    """Trains a :class:`Model` on gold sentences; see the module docstring."""

    def __init__(self, model: Model, config: Config):
        self.model = model
        self.config = config
        cfg = config.training
        self.system = model.system
        # each sentence's encoder states are computed in the first epoch and kept
        model.inputs.keep_all_states()
        self.policy = ExplorationPolicy(cfg.margin, cfg.p_agg)
        params = [p for p in model.network.parameters() if p.requires_grad]
        self.optimizer = _adam(params, cfg.lr, (cfg.beta1, cfg.beta2))
        #: the weights evaluated and saved, when ``training.ema_decay`` > 0
        self.average = WeightAverage(params, cfg.ema_decay) if cfg.ema_decay > 0 else None
        #: averages the gradients over processes between backward and the step, told
        #: each batch's inputs first (:class:`~kgparser.training.distributed.GradientAverager`)
        self.synchronize = None
        n_transitions = len(model.transitions)
        self.static_columns = np.zeros(n_transitions, dtype=bool)
        for action in self.system.static_actions:
            if action in model.action_columns:
                first, stop = model.action_columns[action]
                self.static_columns[first:stop] = True

    # -- data -------------------------------------------------------------------------------

    def examples(self, sentences: Sequence) -> list[Example]:
        """Gold trees as label ids, with whether the system can build them."""
        label_id = self.model.label_id
        examples = []
        for sentence in sentences:
            heads = list(sentence.heads)
            labels = [-1] + [label_id.get(d, 0) for d in sentence.deprels[1:]]
            examples.append(Example(sentence, heads, labels, self.system.can_build(heads)))
        return examples

    # -- one batch --------------------------------------------------------------------------

    def train_batch(self, examples: Sequence[Example], explore: bool, rng: random.Random,
                    np_rng: np.random.Generator) -> EpochStats:
        """One update on a batch; ``explore`` enables error exploration."""
        model, network = self.model, self.model.network
        stats = EpochStats(sentences=len(examples), tokens=sum(e.sentence.n for e in examples))
        network.train()
        inputs = model.inputs([e.sentence for e in examples], rng=np_rng, given_tags=False)
        if self.synchronize is not None:
            self.synchronize.batch_started(inputs)
        vectors, tag_scores = network.encode_all(inputs)
        projected = network.project(vectors)
        oracles = [self._oracle(e) for e in examples]
        hinges = _HingeTerms()
        self._advance(examples, oracles, inputs, projected.detach(), explore, rng, hinges, stats)
        stats.oracle_fallbacks = sum(getattr(oracle.dynamic, "fallbacks", 0) for oracle in oracles if oracle.dynamic)
        loss = self._batch_loss(projected, hinges, stats)
        self._update(self._with_tagging_loss(loss, tag_scores, examples, stats))
        return stats

    def _oracle(self, example: Example) -> "_SentenceOracle":
        """The oracles one sentence trains with (``STATIC``: the static oracle alone)."""
        # trees the system cannot build get here only with `unbuildable: dynamic`
        mode = self.config.training.oracle if example.buildable else DYNAMIC
        static = self.system.static_oracle(example.heads) if mode in (STATIC, STATIC_DYNAMIC) else None
        dynamic = self.system.dynamic_oracle(example.heads) if mode != STATIC else None
        return _SentenceOracle(mode, static, dynamic)

    def _advance(self, examples: Sequence[Example], oracles: list["_SentenceOracle"], inputs: dict,
                 detached: torch.Tensor, explore: bool, rng: random.Random, hinges: "_HingeTerms",
                 stats: EpochStats) -> None:
        """Run every sentence's parser state to its end in lock-step, recording the
        hinge terms of the states with a choice (scored by one MLP call per step)."""
        system = self.system
        states = [system.initial_state(e.sentence.n) for e in examples]
        live = [i for i, s in enumerate(states) if not system.is_final(s)]
        while live:
            step = self._step(live, states, oracles, examples, inputs, stats)
            if step.scored:
                choice = self._compare(detached, step, hinges, stats)
                self._follow(step, choice, states, oracles, explore, rng, stats)
            live = [i for i in live if not system.is_final(states[i])]

    def _step(self, live: list[int], states: list, oracles: list["_SentenceOracle"],
              examples: Sequence[Example], inputs: dict, stats: EpochStats) -> "_Step":
        """The live states with a choice and their correct transitions; states with
        one legal action that builds no arc take it without being scored."""
        system, model = self.system, self.model
        step = _Step()
        for i in live:
            state = states[i]
            legal = system.legal_actions(state)
            stats.transitions += 1
            if len(legal) == 1 and legal[0] not in model.arc_actions:
                system.apply(state, legal[0])
                continue
            started = time.perf_counter()
            correct, follow = self._correct_columns(state, oracles[i], examples[i])
            stats.oracle_seconds += time.perf_counter() - started
            step.scored.append(i)
            step.legal.append(legal)
            step.correct.append(correct)
            step.follow.append(follow)
            state_rows(model, state, inputs["offsets"][i], inputs["pad_row"], step.rows)
        return step

    def _compare(self, detached: torch.Tensor, step: "_Step", hinges: "_HingeTerms",
                 stats: EpochStats) -> "_Choice":
        """Score the step's states without gradients; record the hinge terms above zero."""
        model, network = self.model, self.model.network
        count = len(step.scored)
        step_rows = flat_rows(model, step.rows, count)
        with torch.no_grad():
            scores = network.scores(network.hidden(detached, step_rows), model.transition_action,
                                    model.transition_label).cpu().numpy()
        if not np.isfinite(scores).all():
            raise Diverged("the model's transition scores are not finite (NaN or inf)")
        legal_actions = np.array([[a in legal for a in model.actions] for legal in step.legal], dtype=bool)
        correct_mask = np.zeros((count, len(model.transitions)), dtype=bool)
        correct_mask[[j for j, cols in enumerate(step.correct) for _ in cols],
                     [c for cols in step.correct for c in cols]] = True
        choice = _Choice(scores, legal_actions[:, model.transition_action_np], correct_mask)
        violated = np.flatnonzero(choice.has_wrong & (self.config.training.margin - choice.correct_score
                                                      + choice.wrong_score > 0))
        if len(violated):
            hinges.add(step_rows, violated, choice)
        stats.scored += count
        return choice

    def _follow(self, step: "_Step", choice: "_Choice", states: list, oracles: list["_SentenceOracle"],
                explore: bool, rng: random.Random, stats: EpochStats) -> None:
        """Apply each scored state's transition: the oracle's where it fixes one, else
        the best-scored correct one or, exploring, the exploration policy's pick."""
        for j, i in enumerate(step.scored):
            column = step.follow[j]
            if column < 0:
                column = int(choice.best_correct[j])
                mode = oracles[i].mode
                if explore and mode != STATIC and choice.has_wrong[j]:
                    wrong, w_score = int(choice.best_wrong[j]), float(choice.wrong_score[j])
                    if mode == STATIC_DYNAMIC and self.static_columns[wrong]:
                        wrong, w_score = self._best_non_static(choice.scores[j], choice.wrong_mask[j])
                    column = self.policy.choose(column, float(choice.correct_score[j]), wrong, w_score, rng)
            if not choice.correct_mask[j, column]:
                stats.wrong_followed += 1
            action, label = self.model.transitions[column]
            self.system.apply(states[i], action, label)

    def _update(self, loss: torch.Tensor | None) -> None:
        """One optimizer step on ``loss`` (none without a loss, unless the
        gradients are averaged over processes: every process must take part)."""
        if loss is None and self.synchronize is None:
            return
        self.optimizer.zero_grad(set_to_none=True)
        if loss is not None:
            loss.backward()
        if self.synchronize is not None:
            self.synchronize()
        clip = self.config.training.clip
        if clip > 0 and not torch.isfinite(torch.nn.utils.clip_grad_norm_(self.model.network.parameters(), clip)):
            raise Diverged("the gradients are not finite (NaN or inf)")
        self.optimizer.step()
        if self.average is not None:
            self.average.update()

    def _best_non_static(self, scores: np.ndarray, wrong_mask: np.ndarray) -> tuple[int, float]:
        candidates = np.where(wrong_mask & ~self.static_columns, scores, -np.inf)
        column = int(candidates.argmax())
        return (column, float(candidates[column])) if math.isfinite(candidates[column]) else (-1, 0.0)

    def _batch_loss(self, projected: torch.Tensor, hinges: "_HingeTerms", stats: EpochStats) -> torch.Tensor | None:
        """Sum of the recorded hinge terms, recomputed with gradients in one MLP call,
        divided by the number of scored states."""
        if not hinges.correct:
            return None
        network, model = self.model.network, self.model
        rows = torch.cat([step_rows.index_select(0, torch.from_numpy(which).to(step_rows.device))
                          for step_rows, which in hinges.pending])
        scores = network.scores(network.hidden(projected, rows), model.transition_action, model.transition_label)
        index = torch.arange(len(hinges.correct), device=scores.device)
        correct_t = torch.tensor(hinges.correct, device=scores.device)
        wrong_t = torch.tensor(hinges.wrong, device=scores.device)
        margin = self.config.training.margin
        hinge = torch.clamp(margin - scores[index, correct_t] + scores[index, wrong_t], min=0.0)
        total = hinge.sum()
        if not torch.isfinite(total):
            raise Diverged("the training loss is not finite (NaN or inf)")
        stats.loss += float(total.detach())
        check_loss_bound(stats.loss / max(stats.scored, 1), margin)
        return total / max(stats.scored, 1)

    def _with_tagging_loss(self, loss: torch.Tensor | None, scores: dict, examples: Sequence[Example],
                           stats: EpochStats) -> torch.Tensor | None:
        """``loss`` plus the joint tagger's cross-entropy, summed over the batch's words
        and columns, times ``model.tagger.loss_weight``, and divided like the hinge sum
        by the number of scored parser states: at weight 1 one word's tag weighs as
        much as one parser decision, whatever the batch size (the stack-based systems
        make up to 2n decisions for n words, so the parser keeps the larger share)."""
        if not scores:
            return loss
        total, words = tagging_loss(scores, tag_targets(self.model, [e.sentence for e in examples]))
        if not torch.isfinite(total):
            raise Diverged("the tagging loss is not finite (NaN or inf)")
        stats.tag_loss += float(total.detach())
        stats.tagged += words
        weighted = self.config.model.tagger.loss_weight * total / max(stats.scored, 1)
        return weighted if loss is None else loss + weighted

    def _correct_columns(self, state, oracle: "_SentenceOracle", example: Example) -> tuple[list[int], int]:
        """Columns of the correct transitions and, when the oracle fixes it, the one to follow (else -1)."""
        columns = self.model.action_columns
        mode, static, dynamic = oracle.mode, oracle.static, oracle.dynamic
        if mode == STATIC:
            action = static.next_action(state)
            column = self._column(state, action, example)
            return [column], column
        if mode == STATIC_DYNAMIC:
            action = static.next_action(state)
            if action in self.system.static_actions:
                column = self._column(state, action, example)
                return [column], column
            costs = dynamic.costs(state)
            costs = {a: c for a, c in costs.items() if a not in self.system.static_actions} or costs
        else:
            costs = dynamic.costs(state)
        least = min(costs.values())
        return [self._column(state, a, example) for a, c in costs.items() if c == least and a in columns], -1

    def _column(self, state, action: str, example: Example) -> int:
        first, _ = self.model.action_columns[action]
        if action in self.model.arc_actions:
            _, dependent = self.system.arc_of(state, action)
            return first + max(example.labels[dependent], 0)
        return first



@dataclass
class _SentenceOracle:
    """How one sentence is taught: its mode and the oracles that mode reads."""

    mode: str
    static: object
    dynamic: object


@dataclass
class _Step:
    """The states of one lock-step that have a choice: their batch indices, legal
    actions, correct columns, the column the oracle fixes (-1: none) and their
    feature rows."""

    scored: list[int] = field(default_factory=list)
    legal: list[list[str]] = field(default_factory=list)
    correct: list[list[int]] = field(default_factory=list)
    follow: list[int] = field(default_factory=list)
    rows: list = field(default_factory=list)


class _Choice:
    """The best correct and the best wrong (legal, not correct) transition of each
    scored state, and their scores."""

    def __init__(self, scores: np.ndarray, legal_mask: np.ndarray, correct_mask: np.ndarray):
        self.scores = scores
        self.correct_mask = correct_mask
        self.wrong_mask = legal_mask & ~correct_mask
        self.best_correct = np.where(correct_mask, scores, -np.inf).argmax(1)
        self.best_wrong = np.where(self.wrong_mask, scores, -np.inf).argmax(1)
        self.has_wrong = self.wrong_mask.any(1)
        position = np.arange(len(scores))
        self.correct_score = scores[position, self.best_correct]
        self.wrong_score = scores[position, self.best_wrong]


@dataclass
class _HingeTerms:
    """The batch's violated states: per step its feature rows and the violated
    positions, and per violated state its best correct and best wrong column."""

    pending: list[tuple[torch.Tensor, np.ndarray]] = field(default_factory=list)
    correct: list[int] = field(default_factory=list)
    wrong: list[int] = field(default_factory=list)

    def add(self, step_rows: torch.Tensor, violated: np.ndarray, choice: _Choice) -> None:
        self.pending.append((step_rows, violated))
        self.correct.extend(choice.best_correct[violated].tolist())
        self.wrong.extend(choice.best_wrong[violated].tolist())
