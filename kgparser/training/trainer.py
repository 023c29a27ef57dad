"""Batched training with static or dynamic oracles and error exploration
(Kiperwasser & Goldberg 2016, section 3; Goldberg & Nivre 2013, section 4).

One batch: the BiLSTM reads all sentences at once and every first-layer slot
projection is computed once (:meth:`Network.project`); the parser states then
advance in lock-step (:class:`~kgparser.model.stepper.Stepper`, shared with the
decoder), the states with a choice being scored together by one MLP call per
step on detached projections (:class:`_Teacher` decides for them).  Each state's hinge term
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
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

from ..config import Config
from ..errors import KgparserError
from ..io.conllu import Sentence
from ..model import Model
from ..model.stepper import Step, Stepper, no_action_error
from ..model.tagger import tag_targets, tagging_loss
from ..transitions.base import DynamicOracle, StaticOracle
from .averaging import WeightAverage
from .exploration import ExplorationPolicy

if TYPE_CHECKING:
    from .distributed import GradientAverager

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

    sentence: Sentence
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

    def add(self, other: EpochStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summed_over_processes(self) -> EpochStats:
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


def _parameter_groups(network, params: list, config: Config) -> list[dict]:
    """The optimizer's groups: a fine-tuned encoder's layers at ``model.encoder.lr``
    (pretrained weights want small steps), the rest at ``training.lr``."""
    if network.finetuned_encoder is None:
        return [{"params": params}]
    encoder = {id(p) for p in network.finetuned_encoder.parameters()}
    return [{"params": [p for p in params if id(p) not in encoder]},
            {"params": [p for p in params if id(p) in encoder], "lr": config.model.encoder.lr}]


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
        self.optimizer = _adam(_parameter_groups(model.network, params, config), cfg.lr, (cfg.beta1, cfg.beta2))
        #: the weights evaluated and saved, when ``training.ema_decay`` > 0
        self.average = WeightAverage(params, cfg.ema_decay) if cfg.ema_decay > 0 else None
        #: averages the gradients over processes between backward and the step, told
        #: each batch's inputs first (:class:`~kgparser.training.distributed.GradientAverager`)
        self.synchronize: GradientAverager | None = None
        #: the columns of the system's ``static_actions`` (``static-dynamic`` training)
        self.static_columns = model.inventory.mask(self.system.static_actions)

    # -- data -------------------------------------------------------------------------------

    def examples(self, sentences: Sequence) -> list[Example]:
        """Gold trees as label ids, with whether the system can build them."""
        label_id = self.model.inventory.label_id
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
        batch = model.inputs([e.sentence for e in examples], rng=np_rng, given_tags=False)
        if self.synchronize is not None:
            self.synchronize.batch_started(batch)
        encoded = model.encode(batch)
        oracles = [self._oracle(e) for e in examples]
        stepper = Stepper(model, [e.sentence for e in examples])
        teacher = _Teacher(self, stepper, examples, oracles, explore, rng, stats)
        stepper.run(teacher, encoded)
        stats.transitions += stepper.transitions
        stats.oracle_fallbacks = sum(getattr(oracle.dynamic, "fallbacks", 0) for oracle in oracles if oracle.dynamic)
        loss = self._batch_loss(encoded.projected, teacher.hinges, stats)
        self._update(self._with_tagging_loss(loss, encoded.tag_scores, examples, stats))
        return stats

    def _oracle(self, example: Example) -> _SentenceOracle:
        """The oracles one sentence trains with (``STATIC``: the static oracle alone)."""
        # trees the system cannot build get here only with `unbuildable: dynamic`
        mode = self.config.training.oracle if example.buildable else DYNAMIC
        static = self.system.static_oracle(example.heads) if mode in (STATIC, STATIC_DYNAMIC) else None
        dynamic = self.system.dynamic_oracle(example.heads) if mode != STATIC else None
        return _SentenceOracle(mode, static, dynamic)

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

    def _batch_loss(self, projected: torch.Tensor, hinges: _HingeTerms, stats: EpochStats) -> torch.Tensor | None:
        """Sum of the recorded hinge terms, recomputed with gradients in one MLP call,
        divided by the number of scored states."""
        if not hinges.correct:
            return None
        network, model = self.model.network, self.model
        rows = torch.cat([step_rows.index_select(0, torch.from_numpy(which).to(step_rows.device))
                          for step_rows, which in hinges.pending])
        inventory = model.inventory
        scores = network.scores(network.hidden(projected, rows), inventory.column_action, inventory.column_label)
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


@dataclass
class _SentenceOracle:
    """How one sentence is taught: its mode and the oracles that mode reads."""

    mode: str
    static: StaticOracle | None
    dynamic: DynamicOracle | None


class _Teacher:
    """Decides for the trainer's stepper (:class:`~kgparser.model.stepper.Chooser`):
    the correct columns of each state with a choice, the hinge terms of the
    states whose best correct transition does not beat the best wrong one by
    the margin, and the transition followed: the oracle's where it fixes one,
    else the best-scored correct one or, exploring, the exploration policy's pick."""

    def __init__(self, trainer: Trainer, stepper: Stepper, examples: Sequence[Example],
                 oracles: list[_SentenceOracle], explore: bool, rng: random.Random, stats: EpochStats):
        self.trainer, self.stepper, self.examples, self.oracles = trainer, stepper, examples, oracles
        self.explore, self.rng, self.stats = explore, rng, stats
        self.inventory, self.system = trainer.model.inventory, trainer.system
        self.hinges = _HingeTerms()
        #: per scored state of the current step: its correct columns and the column the oracle fixes (-1: none)
        self.correct: list[list[int]] = []
        self.follow: list[int] = []

    def consider(self, step: Step, i: int, state, legal: list[str]) -> None:
        started = time.perf_counter()
        correct, follow = self._correct_columns(state, self.oracles[i], self.examples[i])
        self.stats.oracle_seconds += time.perf_counter() - started
        self.correct.append(correct)
        self.follow.append(follow)

    def decide(self, step: Step, rows: torch.Tensor, hidden: torch.Tensor) -> None:
        choice = self._compare(step, rows, hidden)
        self._follow(step, choice)
        self.correct, self.follow = [], []

    def stuck(self, i: int, state) -> None:
        raise no_action_error(self.system)

    def restarts(self, i: int) -> bool:
        return False

    def _compare(self, step: Step, rows: torch.Tensor, hidden: torch.Tensor) -> _Choice:
        """Score the step's states without gradients; record the hinge terms above zero."""
        inventory, network, count = self.inventory, self.trainer.model.network, len(step.scored)
        with torch.no_grad():
            scores = network.scores(hidden, inventory.column_action, inventory.column_label).cpu().numpy()
        if not np.isfinite(scores).all():
            raise Diverged("the model's transition scores are not finite (NaN or inf)")
        legal_actions = np.array([[a in legal for a in inventory.actions] for legal in step.legal], dtype=bool)
        correct_mask = np.zeros((count, len(inventory.columns)), dtype=bool)
        correct_mask[[j for j, cols in enumerate(self.correct) for _ in cols],
                     [c for cols in self.correct for c in cols]] = True
        choice = _Choice(scores, legal_actions[:, inventory.column_action_np], correct_mask)
        violated = np.flatnonzero(choice.has_wrong & (self.trainer.config.training.margin - choice.correct_score
                                                      + choice.wrong_score > 0))
        if len(violated):
            self.hinges.add(rows, violated, choice)
        self.stats.scored += count
        return choice

    def _follow(self, step: Step, choice: _Choice) -> None:
        """Apply each scored state's transition (see the class docstring)."""
        for j, i in enumerate(step.scored):
            column = self.follow[j]
            if column < 0:
                column = int(choice.best_correct[j])
                mode = self.oracles[i].mode
                if self.explore and mode != STATIC and choice.has_wrong[j]:
                    wrong, w_score = int(choice.best_wrong[j]), float(choice.wrong_score[j])
                    if mode == STATIC_DYNAMIC and self.trainer.static_columns[wrong]:
                        wrong, w_score = self._best_non_static(choice.scores[j], choice.wrong_mask[j])
                    column = self.trainer.policy.choose(column, float(choice.correct_score[j]), wrong, w_score,
                                                        self.rng)
            if not choice.correct_mask[j, column]:
                self.stats.wrong_followed += 1
            self.stepper.apply(i, *self.inventory.columns[column])

    def _best_non_static(self, scores: np.ndarray, wrong_mask: np.ndarray) -> tuple[int, float]:
        candidates = np.where(wrong_mask & ~self.trainer.static_columns, scores, -np.inf)
        column = int(candidates.argmax())
        return (column, float(candidates[column])) if math.isfinite(candidates[column]) else (-1, 0.0)

    def _correct_columns(self, state, oracle: _SentenceOracle, example: Example) -> tuple[list[int], int]:
        """Columns of the correct transitions and, when the oracle fixes it, the one to follow (else -1)."""
        columns, system = self.inventory.action_columns, self.system
        mode, static, dynamic = oracle.mode, oracle.static, oracle.dynamic
        if mode == STATIC:
            assert static is not None  # made for this mode (Trainer._oracle)
            column = self._column(state, static.next_action(state), example)
            return [column], column
        assert dynamic is not None  # made for every mode but STATIC (Trainer._oracle)
        if mode == STATIC_DYNAMIC:
            assert static is not None
            action = static.next_action(state)
            if action in system.static_actions:
                column = self._column(state, action, example)
                return [column], column
            costs = dynamic.costs(state)
            costs = {a: c for a, c in costs.items() if a not in system.static_actions} or costs
        else:
            costs = dynamic.costs(state)
        least = min(costs.values())
        return [self._column(state, a, example) for a, c in costs.items() if c == least and a in columns], -1

    def _column(self, state, action: str, example: Example) -> int:
        """The column of ``action`` with, for an arc, the gold label of its dependent."""
        if action in self.inventory.arc_actions:
            _, dependent = self.system.arc_of(state, action)
            return self.inventory.column(action, max(example.labels[dependent], 0))
        return self.inventory.column(action)


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
