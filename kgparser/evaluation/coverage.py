"""How much of a treebank each transition system can build.

For every sentence and system: can the system derive the gold tree exactly
(``system.can_build``)?  For trees it cannot build, how many gold arcs can it
still recover?  That number comes from following the system's dynamic oracle
(always a cheapest action) from the initial state, so for systems with an
exact oracle it is the best any computation achieves; for the others it is
what training against the oracle aims at.  Treebank-wide non-projectivity
figures are reported alongside.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..transitions import get_system, system_names
from ..transitions.base import hamming_loss
from ..transitions.trees import nonprojective_arcs


@dataclass
class SystemCoverage:
    sentences: int = 0
    buildable_sentences: int = 0
    arcs: int = 0
    recoverable_arcs: int = 0

    @property
    def sentence_share(self) -> float:
        return self.buildable_sentences / self.sentences if self.sentences else 1.0

    @property
    def arc_share(self) -> float:
        return self.recoverable_arcs / self.arcs if self.arcs else 1.0


@dataclass
class TreebankStatistics:
    name: str
    sentences: int = 0
    words: int = 0
    nonprojective_sentences: int = 0
    nonprojective_arcs: int = 0
    systems: dict[str, SystemCoverage] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "treebank": self.name,
            "sentences": self.sentences,
            "words": self.words,
            "nonprojective_sentences": self.nonprojective_sentences,
            "nonprojective_sentence_share": self.nonprojective_sentences / max(self.sentences, 1),
            "nonprojective_arcs": self.nonprojective_arcs,
            "nonprojective_arc_share": self.nonprojective_arcs / max(self.words, 1),
            "mean_nonprojective_arcs_per_nonprojective_sentence":
                self.nonprojective_arcs / max(self.nonprojective_sentences, 1),
            "systems": {
                name: {
                    "buildable_sentences": c.buildable_sentences,
                    "sentence_share": c.sentence_share,
                    "recoverable_arcs": c.recoverable_arcs,
                    "arc_share": c.arc_share,
                }
                for name, c in self.systems.items()
            },
        }


def oracle_recoverable_arcs(system, gold_heads: Sequence[int]) -> int:
    """Gold arcs in the tree built by always taking a cheapest action."""
    oracle = system.dynamic_oracle(gold_heads)
    state = system.initial_state(len(gold_heads) - 1)
    while not system.is_final(state):
        costs = oracle.costs(state)
        best = min(costs.values())
        system.apply(state, next(a for a in system.actions if costs.get(a) == best))
    return len(gold_heads) - 1 - hamming_loss(state.heads, gold_heads)


def treebank_statistics(name: str, trees: Iterable[Sequence[int]],
                        systems: Sequence[str] | None = None) -> TreebankStatistics:
    """Coverage of each system (default: all registered) over gold ``trees``."""
    chosen = {s: get_system(s) for s in (systems or system_names())}
    stats = TreebankStatistics(name, systems={s: SystemCoverage() for s in chosen})
    for heads in trees:
        n = len(heads) - 1
        stats.sentences += 1
        stats.words += n
        crossing = len(nonprojective_arcs(heads))
        stats.nonprojective_arcs += crossing
        stats.nonprojective_sentences += crossing > 0
        for sname, system in chosen.items():
            cov = stats.systems[sname]
            cov.sentences += 1
            cov.arcs += n
            if system.can_build(heads):
                cov.buildable_sentences += 1
                cov.recoverable_arcs += n
            else:
                cov.recoverable_arcs += oracle_recoverable_arcs(system, heads)
    return stats


def format_markdown(all_stats: Sequence[TreebankStatistics]) -> str:
    """One row per treebank: non-projectivity, then per system the share of
    sentences built exactly / share of gold arcs recoverable."""
    systems = list(all_stats[0].systems) if all_stats else []
    head = ["treebank", "sentences", "words", "non-proj. sents", "non-proj. arcs"]
    head += [f"{s} sents / arcs" for s in systems]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for st in all_stats:
        row = [st.name, str(st.sentences), str(st.words),
               f"{100 * st.nonprojective_sentences / max(st.sentences, 1):.2f}%",
               f"{100 * st.nonprojective_arcs / max(st.words, 1):.2f}%"]
        row += [f"{100 * st.systems[s].sentence_share:.2f}% / {100 * st.systems[s].arc_share:.2f}%" for s in systems]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def format_text(all_stats: Sequence[TreebankStatistics]) -> str:
    out = []
    for st in all_stats:
        d = st.to_dict()
        out.append(f"{st.name}: {st.sentences} sentences, {st.words} words; non-projective: "
                   f"{100 * d['nonprojective_sentence_share']:.2f}% of sentences, "
                   f"{100 * d['nonprojective_arc_share']:.2f}% of arcs "
                   f"({d['mean_nonprojective_arcs_per_nonprojective_sentence']:.2f} per non-projective sentence)")
        width = max(len(s) for s in st.systems) if st.systems else 0
        out.append(f"  {'system':<{width}}  sentences built exactly   gold arcs recoverable")
        for sname, cov in st.systems.items():
            out.append(f"  {sname:<{width}}  {100 * cov.sentence_share:6.2f}% ({cov.buildable_sentences:>6})"
                       f"         {100 * cov.arc_share:6.2f}%")
    return "\n".join(out)
