"""The report of a grid: a Markdown file with the test scores of every
configuration (mean and standard deviation over seeds), the named comparisons
with their significance tests, accuracy by arc length, non-projective arc
precision/recall, SVG plots (learning curves, accuracy by arc length), and
the runs' training times, commits and machines (from their ``metrics.jsonl``
and ``experiment.json``);
plus ``results.json`` with the same numbers for other tools.

Seeds in the comparisons (``report.seeds``):

* ``pooled`` (default): only seeds finished for both configurations are used;
  per sentence, the correct-word counts of those seeds are summed, so the
  compared scores are the mean accuracies over seeds, and resampling (or
  swapping) a sentence moves all its seeds' analyses together.
* ``per-seed``: seed ``s`` of A is tested against seed ``s`` of B; the table
  says in how many seeds the difference is significant (and the largest p).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..evaluation.scores import DISTANCE_BUCKETS, PRF, NonProjective
from ..io.atomic import write_text
from .collect import RunResult
from .grid import SEED_AXIS, Comparison, Grid, GridError
from .significance import paired_test
from .svg import line_chart

METRICS = ("uas", "las")
#: the comparisons also test the precision of the predicted non-projective arcs
NONPROJECTIVE_PRECISION = "nonprojective_precision"


@dataclass
class Configuration:
    """The runs of one grid point without its seed."""

    labels: tuple[tuple[str, str], ...]
    results: list[RunResult]

    @property
    def name(self) -> str:
        return ", ".join(label for _, label in self.labels) or "all"

    @property
    def scored(self) -> list[RunResult]:
        return [r for r in self.results if r.scored]

    def seed_of(self, result: RunResult) -> str:
        return result.run.labels.get(SEED_AXIS, "-")

    def mean_sd(self, metric: str) -> tuple[float | None, float | None]:
        values = [getattr(r, metric) for r in self.scored]
        if not values:
            return None, None
        return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)

    def pooled_nonprojective(self) -> NonProjective:
        total = NonProjective()
        for r in self.scored:
            counts = r.test_scores.nonprojective
            assert counts is not None  # a run's test scores count its non-projective arcs
            total = total + counts
        return total

    def pooled_by_length(self) -> dict[str, PRF]:
        return {bucket: sum((r.test_scores.per_distance.get(bucket, PRF()) for r in self.scored), PRF())
                for bucket in DISTANCE_BUCKETS}


def configurations(results: list[RunResult]) -> list[Configuration]:
    groups: dict[tuple, list[RunResult]] = {}
    for result in results:
        groups.setdefault(result.run.configuration(), []).append(result)
    return [Configuration(labels, members) for labels, members in groups.items()]


def _matches(configuration: Configuration, selector: tuple[tuple[str, str], ...]) -> bool:
    labels = dict(configuration.labels)
    return all(labels.get(axis) == label for axis, label in selector)


@dataclass
class ComparisonRow:
    group: tuple[tuple[str, str], ...]
    a: Configuration
    b: Configuration
    seeds: list[str]
    #: metric -> [(p-value, score a, score b), ...]: one entry pooled, or one per seed
    tests: dict[str, list[tuple[float, float, float]]]

    def delta(self, metric: str) -> float:
        return float(np.mean([b - a for _, a, b in self.tests[metric]]))

    def score(self, metric: str, side: int) -> float:
        return float(np.mean([entry[side] for entry in self.tests[metric]]))


def _pair(comparison: Comparison, configs: list[Configuration], grid: Grid) -> list[tuple]:
    """(group labels, A, B) for every combination of the ``over`` axes."""
    groups: dict[tuple, list[Configuration]] = {}
    for config in configs:
        labels = dict(config.labels)
        groups.setdefault(tuple((axis, labels[axis]) for axis in comparison.over), []).append(config)
    pairs = []
    for group, members in groups.items():
        side_a = [c for c in members if _matches(c, comparison.a)]
        side_b = [c for c in members if _matches(c, comparison.b)]
        for side, name in ((side_a, "a"), (side_b, "b")):
            if len(side) > 1:
                varying = sorted({axis for c in side for axis, label in c.labels
                                  if label != dict(side[0].labels)[axis]})
                raise GridError(f"{grid.path}: compare {comparison.name!r}: '{name}' matches several "
                                f"configurations (they differ in {', '.join(varying)}); add those axes "
                                "to 'over' or to 'a'/'b'")
        if side_a and side_b:
            pairs.append((group, side_a[0], side_b[0]))
    return pairs


def _by_seed(config: Configuration) -> dict[str, RunResult]:
    return {config.seed_of(r): r for r in config.scored}


def compare(comparison: Comparison, configs: list[Configuration], grid: Grid) -> list[ComparisonRow]:
    settings = grid.report
    rows = []
    for group, a, b in _pair(comparison, configs, grid):
        runs_a, runs_b = _by_seed(a), _by_seed(b)
        seeds = [s for s in runs_a if s in runs_b]
        if not seeds:
            continue
        for seed in seeds:
            if runs_a[seed].test_file != runs_b[seed].test_file:
                raise GridError(f"{grid.path}: compare {comparison.name!r}: {a.name} and {b.name} were "
                                "tested on different files; pair configurations on the same test set")
        tests = {metric: _tests(settings, [(runs_a[s], runs_b[s]) for s in seeds], metric)
                 for metric in (*METRICS, NONPROJECTIVE_PRECISION)}
        rows.append(ComparisonRow(group, a, b, seeds, tests))
    return rows


#: metric -> (numerator, denominator) per test sentence, as counts of :attr:`Scores.by_sentence`
TESTED = {"uas": ("correct_heads", "words"), "las": ("correct_labeled", "words"),
          NONPROJECTIVE_PRECISION: ("nonprojective_right", "nonprojective_predicted")}


def _tests(settings, pairs: list[tuple[RunResult, RunResult]], metric: str) -> list[tuple[float, float, float]]:
    """(p-value, score A, score B) of ``metric``: one entry over the pooled seeds,
    or one per seed; none where a side has nothing to score (a precision
    without predicted non-projective arcs)."""
    numerator, denominator = TESTED[metric]

    def terms(result: RunResult) -> tuple[np.ndarray, np.ndarray]:
        return result.by_sentence(numerator), result.by_sentence(denominator)

    if settings.seeds == "pooled":
        sides = [[terms(pair[side]) for pair in pairs] for side in (0, 1)]
        groups = [tuple((np.sum([t[0] for t in side], axis=0), np.sum([t[1] for t in side], axis=0))
                        for side in sides)]
    else:
        groups = [(terms(a), terms(b)) for a, b in pairs]
    entries = []
    for (right_a, total_a), (right_b, total_b) in groups:
        if total_a.sum() == 0 or total_b.sum() == 0:
            return []
        result = paired_test(settings.test, right_a, right_b, total_a, settings.samples, settings.random_seed,
                             words_b=None if denominator == "words" else total_b)
        entries.append((result.p_value, result.score_a, result.score_b))
    return entries


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def _precision(row: PRF | NonProjective) -> float | None:
    """A row's precision; None (a dash, no point) where it has nothing predicted,
    as a report tells "none predicted" from "none right"."""
    return row.precision if row.predicted else None


def _recall(row: PRF | NonProjective) -> float | None:
    """A row's recall; None where it has no gold arcs."""
    return row.recall if row.gold else None


def _mean_sd(config: Configuration, metric: str) -> str:
    mean, sd = config.mean_sd(metric)
    if mean is None:
        return "–"
    return f"{100 * mean:.2f} ± {100 * sd:.2f}" if sd is not None else f"{100 * mean:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    aligns = ["---:" if rows and _numeric(rows, i) else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _numeric(rows: list[list[str]], column: int) -> bool:
    cells = [row[column] for row in rows if row[column] not in ("–", "")]
    return bool(cells) and all(c.lstrip("*+-")[:1].isdigit() for c in cells)


def _significance_cell(row: ComparisonRow, metric: str, alpha: float, per_seed: bool) -> str:
    p_values = [p for p, _, _ in row.tests[metric]]
    if per_seed:
        hits = sum(p < alpha for p in p_values)
        return f"{hits}/{len(p_values)} (max p {max(p_values):.4f})"
    p = p_values[0]
    return f"{p:.4f}" + (" *" if p < alpha else "")


def _delta_cell(row: ComparisonRow, metric: str, alpha: float) -> str:
    delta = 100 * row.delta(metric)
    text = f"{delta:+.2f}"
    significant = all(p < alpha for p, _, _ in row.tests[metric])
    return f"**{text}**" if significant else text


def _axis_columns(grid: Grid) -> list[str]:
    return [name for name in grid.axis_names if name != SEED_AXIS]


def _minutes(config: Configuration) -> str:
    minutes = [r.training_seconds / 60 for r in config.scored if r.training_seconds is not None]
    if not minutes:
        return "–"
    low, high = f"{min(minutes):.1f}", f"{max(minutes):.1f}"
    return low if low == high else f"{low}–{high}"


def _results_section(grid: Grid, configs: list[Configuration]) -> list[str]:
    header = _axis_columns(grid) + ["seeds", "UAS", "LAS", "min/run"]
    rows = [[label for _, label in c.labels] + [f"{len(c.scored)}/{len(c.results)}", _mean_sd(c, "uas"),
                                                 _mean_sd(c, "las"), _minutes(c)] for c in configs]
    return ["## Test scores", "", "UAS/LAS in %, mean ± sample standard deviation over the finished seeds "
            f"({'all words' if grid.report.punct else 'punctuation excluded'}; LAS with full labels); "
            "min/run: a run's training time in minutes (its epochs' `epoch_seconds` in `metrics.jsonl`, "
            "dev evaluation excluded), lowest–highest over the seeds.", "", *_table(header, rows), ""]


ENVIRONMENT_FIELDS = ("commit", "machine", "python", "torch")


def _provenance_section(results: list[RunResult]) -> list[str]:
    """When and where the finished runs ran, from their markers."""
    finished = [r for r in results if r.status == "finished"]
    if not finished:
        return []
    times = sorted(datetime.strptime(r.finished_at, "%Y-%m-%dT%H:%M:%S%z").astimezone(timezone.utc)
                   for r in finished if r.finished_at)
    hours = sum(r.training_seconds or 0.0 for r in finished) / 3600
    lines = ["## Runs", "", f"{len(finished)} finished runs, {hours:.1f} hours of training in all (as min/run)"
             + (f", finished between {times[0]:%Y-%m-%d %H:%M} and {times[-1]:%Y-%m-%d %H:%M} UTC"
                if times else "") + ".", ""]
    by_environment: dict[tuple, int] = {}
    for result in finished:
        key = tuple(result.environment.get(name) or "not recorded" for name in ENVIRONMENT_FIELDS)
        by_environment[key] = by_environment.get(key, 0) + 1
    rows = [[f"`{key[0]}`" if key[0] != "not recorded" else key[0], *key[1:], str(count)]
            for key, count in sorted(by_environment.items(), key=lambda item: -item[1])]
    return lines + _table([*ENVIRONMENT_FIELDS, "runs"], rows) + [""]


def _comparison_section(grid: Grid, comparisons: list[tuple[Comparison, list[ComparisonRow]]]) -> list[str]:
    settings = grid.report
    test = ("paired bootstrap" if settings.test == "bootstrap" else "paired approximate randomization")
    per_seed = settings.seeds == "per-seed"
    lines = ["## Comparisons", "",
             f"{test} test over test sentences, {settings.samples:,} samples, two-sided; "
             f"Δ = B − A in points; **bold** Δ and * mark p < {settings.alpha:g}. "
             + ("Seeds tested one by one (cells: seeds with p < alpha / seeds)." if per_seed else
                "Seeds pooled (scores are means over the seeds both configurations finished).")
             + " Non-projective precision (where both sides predicted non-projective arcs): the share of the "
               "arcs non-projective in the predicted tree that have the gold head, the same test with each "
               "side's own predicted arcs as denominator" + (" (counts summed over the seeds)." if not per_seed
                                                              else "."), ""]
    for comparison, rows in comparisons:
        lines += [f"### {comparison.name}", ""]
        if not rows:
            lines += ["No pair of configurations has finished runs yet.", ""]
            continue
        precision = any(row.tests[NONPROJECTIVE_PRECISION] for row in rows)
        header = list(comparison.over) + ["A", "B", "seeds", "A LAS", "B LAS", "Δ LAS", "p LAS",
                                          "A UAS", "B UAS", "Δ UAS", "p UAS"]
        header += ["A non-proj. precision", "B non-proj. precision", "Δ", "p"] if precision else []
        shown = ("las", "uas") + ((NONPROJECTIVE_PRECISION,) if precision else ())
        table = []
        for row in rows:
            table.append([label for _, label in row.group] + [
                _short(row.a, comparison), _short(row.b, comparison), str(len(row.seeds))]
                + [cell for metric in shown for cell in _test_cells(row, metric, settings.alpha, per_seed)])
        lines += [*_table(header, table), ""]
    return lines


def _test_cells(row: ComparisonRow, metric: str, alpha: float, per_seed: bool) -> list[str]:
    """A score, B score, Δ and significance of one tested metric (dashes where untested)."""
    if not row.tests[metric]:
        return ["–"] * 4
    return [_pct(row.score(metric, 1)), _pct(row.score(metric, 2)), _delta_cell(row, metric, alpha),
            _significance_cell(row, metric, alpha, per_seed)]


def _short(config: Configuration, comparison: Comparison) -> str:
    shown = [label for axis, label in config.labels if axis not in comparison.over]
    return ", ".join(shown) or config.name


def _length_section(grid: Grid, configs: list[Configuration]) -> list[str]:
    scored = [c for c in configs if c.scored]
    if not scored:
        return []
    buckets = [b for b in DISTANCE_BUCKETS if any(c.pooled_by_length()[b].gold for c in scored)]
    header = _axis_columns(grid) + buckets
    lines = ["## Accuracy by dependency length", "",
             "Unlabeled recall / precision in % by arc length (root = arcs from the root), seeds pooled: "
             "recall over gold arcs of that length, precision over predicted arcs of that length.", ""]
    rows = []
    for c in scored:
        by_length = c.pooled_by_length()
        rows.append([label for _, label in c.labels] +
                    [f"{_pct(_recall(by_length[b]))} / {_pct(_precision(by_length[b]))}" for b in buckets])
    return lines + _table(header, rows) + [""]


def _nonprojective_section(grid: Grid, configs: list[Configuration]) -> list[str]:
    scored = [c for c in configs if c.scored]
    if not scored:
        return []
    rows = []
    for c in scored:
        counts = c.pooled_nonprojective()
        rows.append([label for _, label in c.labels] + [str(counts.gold), str(counts.found),
                                                        str(counts.predicted), str(counts.right),
                                                        _pct(_precision(counts)), _pct(_recall(counts))])
    header = _axis_columns(grid) + ["gold", "gold found", "predicted", "predicted right", "precision", "recall"]
    return ["## Non-projective arcs", "",
            "Recall: of the arcs non-projective in the gold tree (gold), those whose word got the gold head "
            "(gold found); precision: of the arcs non-projective in the predicted tree (predicted), those "
            "whose head is the gold head (predicted right). Counts summed over seeds.", "",
            *_table(header, rows), ""]


def _plot_groups(configs: list[Configuration]) -> dict[str, list[Configuration]]:
    """Plots are made per value of the first axis (typically the treebank)."""
    groups: dict[str, list[Configuration]] = {}
    for config in configs:
        key = config.labels[0][1] if config.labels else "all"
        groups.setdefault(key, []).append(config)
    return groups


def _rest_name(config: Configuration) -> str:
    return ", ".join(label for _, label in config.labels[1:]) or config.name


def _mean_curve(config: Configuration, tag: str) -> list[tuple[float, float]]:
    by_epoch: dict[int, list[float]] = {}
    for result in config.results:
        for epoch, value in result.curves.get(tag, ()):
            by_epoch.setdefault(epoch, []).append(value)
    return [(epoch, float(np.mean(values)) * (100 if tag.startswith("dev/") else 1))
            for epoch, values in sorted(by_epoch.items())]


def _plots(grid: Grid, configs: list[Configuration], directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["## Plots", ""]
    for group, members in _plot_groups(configs).items():
        curves = {_rest_name(c): _mean_curve(c, "dev/las") for c in members}
        curves = {name: points for name, points in curves.items() if points}
        if curves:
            path = line_chart(curves, directory / f"learning-curve-{group}.svg",
                              title=f"{group}: dev LAS by epoch (mean over seeds)", x_label="epoch",
                              y_label="dev LAS (%)")
            lines.append(f"![learning curves {group}]({path.parent.name}/{path.name})")
        lengths: dict[str, list[tuple[float, float]]] = {}
        for c in members:
            if c.scored:
                by_length = c.pooled_by_length()
                lengths[_rest_name(c)] = [(i, 100 * by_length[b].recall) for i, b in enumerate(DISTANCE_BUCKETS)
                                          if by_length[b].gold]
        if any(lengths.values()):
            path = line_chart({k: v for k, v in lengths.items() if v}, directory / f"length-recall-{group}.svg",
                              title=f"{group}: attachment recall by gold arc length", x_label="arc length",
                              y_label="recall (%)", x_ticks=list(DISTANCE_BUCKETS))
            lines.append(f"![accuracy by length {group}]({path.parent.name}/{path.name})")
        nonprojective = {}
        for c in members:
            counts = c.pooled_nonprojective()
            if c.scored and counts.predicted and counts.gold:
                nonprojective[_rest_name(c)] = [(100 * counts.recall, 100 * counts.precision)]
        if nonprojective:
            path = line_chart(nonprojective, directory / f"nonprojective-{group}.svg",
                              title=f"{group}: non-projective arcs", x_label="recall (%)",
                              y_label="precision (%)")
            lines.append(f"![non-projective arcs {group}]({path.parent.name}/{path.name})")
    return lines + [""] if len(lines) > 2 else []


def _json(grid: Grid, configs: list[Configuration], comparisons) -> dict:
    def config_data(c: Configuration) -> dict:
        return {"labels": dict(c.labels), "seeds_finished": len(c.scored), "seeds": len(c.results),
                **{f"{m}_{s}": v for m in METRICS for s, v in zip(("mean", "sd"), c.mean_sd(m))},
                "runs": {r.run.name: {"uas": r.uas, "las": r.las, "training_seconds": r.training_seconds,
                                      "seconds": r.seconds, "finished_at": r.finished_at,
                                      "environment": r.environment} for r in c.scored},
                "nonprojective": c.pooled_nonprojective().to_dict(),
                "by_length": {b: v.to_dict() for b, v in c.pooled_by_length().items()}}

    return {"grid": grid.path.name, "name": grid.name, "test": grid.report.test, "samples": grid.report.samples,
            "seeds": grid.report.seeds, "alpha": grid.report.alpha,
            "configurations": [config_data(c) for c in configs],
            "comparisons": [{"name": comparison.name, "rows": [
                {"group": dict(row.group), "a": dict(row.a.labels), "b": dict(row.b.labels), "seeds": row.seeds,
                 **{metric: [{"p": p, "a": a, "b": b} for p, a, b in row.tests[metric]]
                    for metric in (*METRICS, NONPROJECTIVE_PRECISION)}}
                for row in rows]} for comparison, rows in comparisons]}


def write_report(grid: Grid, results: list[RunResult], output: Path | None = None) -> Path:
    """Write ``report.md``, ``results.json`` and ``plots/*.svg``; returns the Markdown path."""
    output = Path(output) if output else grid.report_dir()
    output.mkdir(parents=True, exist_ok=True)
    configs = configurations(results)
    comparisons = [(c, compare(c, configs, grid)) for c in grid.comparisons]
    finished = sum(r.status == "finished" for r in results)
    lines = [f"# {grid.name}", ""]
    if grid.description:
        lines += [grid.description.strip(), ""]
    lines += [f"Grid `{grid.path.name}`, base config `{grid.base.name}`; {finished} of {len(results)} runs "
              f"finished (runs under `{os.path.relpath(grid.output_root, grid.path.parent)}`, "
              f"relative to the grid file).", ""]
    unfinished = [r.run.name for r in results if r.status != "finished"]
    if unfinished:
        lines += [f"Not finished ({len(unfinished)}): " + ", ".join(f"`{n}`" for n in unfinished[:20])
                  + (" …" if len(unfinished) > 20 else ""), ""]
    lines += _results_section(grid, configs)
    lines += _comparison_section(grid, comparisons) if grid.comparisons else []
    lines += _length_section(grid, configs)
    lines += _nonprojective_section(grid, configs)
    lines += _plots(grid, configs, output / "plots")
    lines += _provenance_section(results)
    write_text(output / "results.json", json.dumps(_json(grid, configs, comparisons), indent=2))
    path = output / "report.md"
    write_text(path, "\n".join(lines))
    return path
