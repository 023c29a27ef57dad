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
from dataclasses import dataclass
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
        model, system, network = self.model, self.system, self.model.network
        cfg = self.config.training
        stats = EpochStats(sentences=len(examples), tokens=sum(e.sentence.n for e in examples))
        network.train()
        inputs = model.inputs([e.sentence for e in examples], rng=np_rng, given_tags=False)
        if self.synchronize is not None:
            self.synchronize.batch_started(inputs)
        offsets, pad = inputs["offsets"], inputs["pad_row"]
        vectors, tag_scores = network.encode_all(inputs)
        projected = network.project(vectors)
        detached = projected.detach()
        mode = cfg.oracle
        modes, statics, dynamics = [], [], []
        for e in examples:
            # trees the system cannot build get here only with `unbuildable: dynamic`
            sentence_mode = mode if e.buildable else DYNAMIC
            modes.append(sentence_mode)
            statics.append(system.static_oracle(e.heads) if sentence_mode in (STATIC, STATIC_DYNAMIC) else None)
            dynamics.append(system.dynamic_oracle(e.heads) if sentence_mode != STATIC else None)
        exploring = [explore and m != STATIC for m in modes]
        states = [system.initial_state(e.sentence.n) for e in examples]
        live = [i for i, s in enumerate(states) if not system.is_final(s)]
        arc_actions, transitions = model.arc_actions, model.transitions
        n_transitions = len(transitions)
        margin = cfg.margin
        pending: list[tuple[torch.Tensor, np.ndarray]] = []  # (step rows, violated states) per step
        loss_correct: list[int] = []
        loss_wrong: list[int] = []
        clock = time.perf_counter
        while live:
            scored, rows, legal_sets, correct_sets, fixed = [], [], [], [], []
            for i in live:
                state = states[i]
                legal = system.legal_actions(state)
                stats.transitions += 1
                if len(legal) == 1 and legal[0] not in arc_actions:
                    system.apply(state, legal[0])
                    continue
                started = clock()
                correct, follow = self._correct_columns(state, modes[i], statics[i], dynamics[i], examples[i])
                stats.oracle_seconds += clock() - started
                scored.append(i)
                legal_sets.append(legal)
                correct_sets.append(correct)
                fixed.append(follow)
                state_rows(model, state, offsets[i], pad, rows)
            if not scored:
                live = [i for i in live if not system.is_final(states[i])]
                continue
            count = len(scored)
            step_rows = flat_rows(model, rows, count)
            with torch.no_grad():
                scores = network.scores(network.hidden(detached, step_rows), model.transition_action,
                                        model.transition_label).cpu().numpy()
            if not np.isfinite(scores).all():
                raise Diverged("the model's transition scores are not finite (NaN or inf)")
            legal_actions = np.array([[a in legal for a in model.actions] for legal in legal_sets], dtype=bool)
            legal_mask = legal_actions[:, model.transition_action_np]
            correct_mask = np.zeros((count, n_transitions), dtype=bool)
            correct_mask[[j for j, cols in enumerate(correct_sets) for _ in cols],
                         [c for cols in correct_sets for c in cols]] = True
            best_correct = np.where(correct_mask, scores, -np.inf).argmax(1)
            wrong_mask = legal_mask & ~correct_mask
            wrong_scores = np.where(wrong_mask, scores, -np.inf)
            best_wrong = wrong_scores.argmax(1)
            has_wrong = wrong_mask.any(1)
            position = np.arange(count)
            correct_score = scores[position, best_correct]
            wrong_score = scores[position, best_wrong]
            violated = np.flatnonzero(has_wrong & (margin - correct_score + wrong_score > 0))
            if len(violated):
                pending.append((step_rows, violated))
                loss_correct.extend(best_correct[violated].tolist())
                loss_wrong.extend(best_wrong[violated].tolist())
            stats.scored += count
            for j, i in enumerate(scored):
                column = fixed[j]
                if column < 0:
                    column = int(best_correct[j])
                    if exploring[i] and has_wrong[j]:
                        wrong, w_score = int(best_wrong[j]), float(wrong_score[j])
                        if modes[i] == STATIC_DYNAMIC and self.static_columns[wrong]:
                            wrong, w_score = self._best_non_static(scores[j], wrong_mask[j])
                        column = self.policy.choose(column, float(correct_score[j]), wrong, w_score, rng)
                if not correct_mask[j, column]:
                    stats.wrong_followed += 1
                action, label = transitions[column]
                system.apply(states[i], action, label)
            live = [i for i in live if not system.is_final(states[i])]
        stats.oracle_fallbacks = sum(getattr(oracle, "fallbacks", 0) for oracle in dynamics if oracle)
        loss = self._batch_loss(projected, pending, loss_correct, loss_wrong, margin, stats)
        self._update(self._with_tagging_loss(loss, tag_scores, examples, stats))
        return stats

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

    def _batch_loss(self, projected: torch.Tensor, pending: list, correct: list[int], wrong: list[int],
                    margin: float, stats: EpochStats) -> torch.Tensor | None:
        """Sum of the recorded hinge terms, recomputed with gradients in one MLP call,
        divided by the number of scored states."""
        if not correct:
            return None
        network, model = self.model.network, self.model
        rows = torch.cat([step_rows.index_select(0, torch.from_numpy(which).to(step_rows.device))
                          for step_rows, which in pending])
        scores = network.scores(network.hidden(projected, rows), model.transition_action, model.transition_label)
        index = torch.arange(len(correct), device=scores.device)
        correct_t = torch.tensor(correct, device=scores.device)
        wrong_t = torch.tensor(wrong, device=scores.device)
        hinge = torch.clamp(margin - scores[index, correct_t] + scores[index, wrong_t], min=0.0)
        total = hinge.sum()
        if not torch.isfinite(total):
            raise Diverged("the training loss is not finite (NaN or inf)")
        stats.loss += float(total.detach())
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

    def _correct_columns(self, state, mode: str, static, dynamic, example: Example) -> tuple[list[int], int]:
        """Columns of the correct transitions and, when the oracle fixes it, the one to follow (else -1)."""
        columns = self.model.action_columns
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

