"""Grid files: one YAML file describing a study, expanded into runs.

A grid file names a base config, the axes to vary and the pairs of
configurations to compare (the format is documented in ``experiments/README.md``)::

    name: static-vs-dynamic
    base: ../configs/quickstart.yaml      # relative to this file
    output_root: ../runs/static-vs-dynamic
    set: {training.epochs: 10}            # overrides shared by every run
    axes:                                 # expanded as a product, in this order
      treebank: {ud: ../../shared/ud, values: [UD_Hungarian-Szeged]}
      system: [covington, two-planar]     # shorthand for system.name
      oracle: [static, dynamic]           # shorthand for training.oracle
      seed: [1, 2, 3]
    exclude: [{system: covington, oracle: static}]
    compare: [{a: {oracle: static}, b: {oracle: dynamic}}]
    engine: {kind: local, max_parallel: 2, threads_per_run: 1}

Every run gets a readable output directory made of its axis values, e.g.
``output_root/treebank=Hungarian-Szeged/system=covington/oracle=static/seed=1``,
so a second ``kgparser experiment run`` finds the runs that are already done.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

import yaml

from ..config import INPUT_PATHS, ConfigError, key_problem, load_config, moved_key, resolved_input_path
from ..errors import KgparserError
from ..io.yaml_text import parse_yaml, read_text_file

#: axis names that stand for a config key when their values are a plain list
SHORTHANDS = {
    "system": "system.name",
    "oracle": "training.oracle",
    "seed": "seed",
    "epochs": "training.epochs",
    "projectivize": "data.projectivize",
    "unbuildable": "training.unbuildable",
}
SEED_AXIS = "seed"
IGNORED_IN_FINGERPRINT = ("output_dir", "threads", "device", "training.progress", "training.tensorboard")
ENGINES = ("local", "ray", "slurm")
TESTS = ("bootstrap", "randomization")
SEED_MODES = ("pooled", "per-seed")
_TOP_KEYS = ("name", "description", "base", "output_root", "set", "axes", "exclude", "compare",
             "engine", "report")
_COMPARE_KEYS = ("name", "a", "b", "over")
_LABEL_SAFE = re.compile(r"[^A-Za-z0-9._+-]+")


class GridError(KgparserError):
    """A grid file is invalid (the message names the file and the key)."""


@dataclass(frozen=True)
class AxisValue:
    """One value of an axis: a readable label and the config overrides it stands for."""

    label: str
    overrides: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[AxisValue, ...]

    def labels(self) -> list[str]:
        return [v.label for v in self.values]


@dataclass(frozen=True)
class Run:
    """One grid point: its axis labels, its config overrides and its output directory."""

    point: tuple[tuple[str, str], ...]
    overrides: tuple[tuple[str, Any], ...]
    output_dir: Path

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.point)

    @property
    def name(self) -> str:
        return "/".join(f"{axis}={label}" for axis, label in self.point)

    def configuration(self) -> tuple[tuple[str, str], ...]:
        """The point without its seed: runs that differ only in the seed share it."""
        return tuple((axis, label) for axis, label in self.point if axis != SEED_AXIS)

    def set_arguments(self) -> list[str]:
        """``--set KEY=VALUE`` texts for ``kgparser train`` (values as YAML flow scalars)."""
        return [f"{key}={_yaml_scalar(value)}" for key, value in self.overrides]


@dataclass(frozen=True)
class Comparison:
    """A named pair of configurations: ``a`` and ``b`` fix some axes, ``over`` lists
    the axes whose every combination gives one comparison (default: all other axes
    but the seed)."""

    name: str
    a: tuple[tuple[str, str], ...]
    b: tuple[tuple[str, str], ...]
    over: tuple[str, ...]


@dataclass
class EngineSettings:
    kind: str = "local"
    max_parallel: int | None = None
    threads_per_run: int = 1
    ray: dict = field(default_factory=dict)
    slurm: dict = field(default_factory=dict)

    def parallel(self) -> int:
        """``max_parallel``, by default the cores divided by the threads of a run."""
        if self.max_parallel:
            return self.max_parallel
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return max(1, cores // self.threads_per_run)


@dataclass
class ReportSettings:
    test: str = "bootstrap"
    samples: int = 10_000
    alpha: float = 0.05
    seeds: str = "pooled"
    punct: bool = True
    output: Path | None = None
    random_seed: int = 12345


@dataclass
class Grid:
    path: Path
    name: str
    description: str
    base: Path
    output_root: Path
    axes: list[Axis]
    runs: list[Run]
    comparisons: list[Comparison]
    engine: EngineSettings
    report: ReportSettings

    @property
    def axis_names(self) -> list[str]:
        return [axis.name for axis in self.axes]

    def report_dir(self) -> Path:
        return self.report.output or self.output_root / "report"


def _yaml_scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text[:-len("...")].strip() if text.endswith("...") else text


def label_of(value: Any) -> str:
    """A readable, path-safe label for a scalar value."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    else:
        text = str(value)
    return _LABEL_SAFE.sub("_", text).strip("_") or "_"


def _fail(path: Path, where: str, problem: str) -> GridError:
    return GridError(f"{path}: {where}: {problem}")


def _field_names(cls: type) -> tuple[str, ...]:
    """The keys of a grid section: the fields of its settings class."""
    return tuple(f.name for f in fields(cls))


def _check_keys(path: Path, where: str, raw: dict, known: tuple[str, ...]) -> None:
    for key in raw:
        if key not in known:
            import difflib

            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _fail(path, where, f"unknown key {key!r}{hint}; known keys: {', '.join(known)}")


def _mapping(path: Path, where: str, value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, where, f"expected a mapping, got {type(value).__name__} {value!r}")
    return value


def _overrides(path: Path, where: str, raw: Any) -> tuple[tuple[str, Any], ...]:
    """Dotted-key overrides, each a key of the config (a moved key is renamed, with a
    warning); relative input paths become absolute (against the grid file)."""
    items = []
    for key, value in _mapping(path, where, raw).items():
        if not isinstance(key, str) or not key or not all(key.split(".")):
            raise _fail(path, where, f"{key!r} is not a dotted config key such as training.epochs")
        problem = key_problem(key)
        if problem:
            raise _fail(path, where, problem)
        key = moved_key(key, f"{path}: {where}")
        if key == "output_dir":
            raise _fail(path, f"{where}.{key}", "is set by the grid (output_root and the axis values)")
        if key in INPUT_PATHS and isinstance(value, str):
            value = resolved_input_path(key, value, path.parent)
        items.append((key, value))
    return tuple(items)


def _ud_split(path: Path, where: str, directory: Path, split: str) -> str:
    found = sorted(directory.glob(f"*-ud-{split}.conllu"))
    if len(found) != 1:
        raise _fail(path, where, f"expected one *-ud-{split}.conllu in {directory}, found {len(found)}")
    return str(found[0])


def _ud_axis(path: Path, name: str, raw: dict) -> Axis:
    """``{ud: ROOT, values: [UD_X-Y, {UD_Z-W: {overrides}}, ...]}``: each treebank
    directory gives data.train/dev/test; one written as a single-key mapping adds
    its own overrides (e.g. a smaller budget for a large treebank)."""
    where = f"axes.{name}"
    _check_keys(path, where, raw, ("ud", "values"))
    root = (path.parent / str(raw["ud"])).resolve()
    names = raw.get("values")
    if not isinstance(names, list) or not names:
        raise _fail(path, f"{where}.values", "expected a non-empty list of treebank directories")
    values = []
    for entry in names:
        directory_name = entry
        overrides: tuple[tuple[str, Any], ...] = ()
        if isinstance(entry, dict):
            if len(entry) != 1:
                raise _fail(path, f"{where}.values", f"expected a treebank directory or "
                                                     f"{{directory: {{overrides}}}}, got {entry!r}")
            (directory_name, extra), = entry.items()
            overrides = _overrides(path, f"{where}.values.{directory_name}", extra)
        directory = root / str(directory_name)
        if not directory.is_dir():
            raise _fail(path, f"{where}.values", f"no treebank directory {directory}")
        label = label_of(str(directory_name).removeprefix("UD_"))
        splits = tuple((f"data.{split}", _ud_split(path, where, directory, split))
                       for split in ("train", "dev", "test"))
        values.append(AxisValue(label, splits + overrides))
    return Axis(name, tuple(values))


def _axis(path: Path, name: Any, raw: Any) -> Axis:
    where = f"axes.{name}"
    if not isinstance(name, str) or not name or _LABEL_SAFE.search(name):
        raise _fail(path, "axes", f"axis name {name!r} must be a word (letters, digits, . _ + -)")
    if isinstance(raw, dict) and "ud" in raw:
        return _ud_axis(path, name, raw)
    if isinstance(raw, dict) and "key" in raw:
        _check_keys(path, where, raw, ("key", "values"))
        key, scalars = raw["key"], raw.get("values")
    elif isinstance(raw, list):
        key, scalars = SHORTHANDS.get(name, name if "." in name else None), raw
        if key is None:
            raise _fail(path, where, f"a plain list needs a known axis name ({', '.join(SHORTHANDS)}); "
                                     "otherwise write {key: dotted.config.key, values: [...]} "
                                     "or a mapping from labels to overrides")
    elif isinstance(raw, dict):
        values = tuple(AxisValue(label_of(label), _overrides(path, f"{where}.{label}", overrides))
                       for label, overrides in raw.items())
        return _unique(path, where, Axis(name, values))
    else:
        raise _fail(path, where, f"expected a list or a mapping, got {type(raw).__name__} {raw!r}")
    if not isinstance(scalars, list) or not scalars:
        raise _fail(path, where, "expected a non-empty list of values")
    values = tuple(AxisValue(label_of(v), _overrides(path, where, {key: v})) for v in scalars)
    return _unique(path, where, Axis(name, values))


def _unique(path: Path, where: str, axis: Axis) -> Axis:
    if not axis.values:
        raise _fail(path, where, "an axis needs at least one value")
    labels = axis.labels()
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise _fail(path, where, f"repeated value label(s) {', '.join(repeated)}")
    return axis


def _selector(path: Path, where: str, raw: Any, axes: list[Axis]) -> tuple[tuple[str, str], ...]:
    """``{axis: value}`` (or a list of values) -> ((axis, label), ...), checked against the axes."""
    by_name = {axis.name: axis for axis in axes}
    items = []
    for axis_name, value in _mapping(path, where, raw).items():
        if axis_name not in by_name:
            raise _fail(path, where, f"no axis {axis_name!r}; axes: {', '.join(by_name)}")
        label = label_of(value)
        if label not in by_name[axis_name].labels():
            raise _fail(path, f"{where}.{axis_name}", f"{value!r} is not one of "
                                                        f"{', '.join(by_name[axis_name].labels())}")
        items.append((axis_name, label))
    return tuple(items)


def _comparison(path: Path, index: int, raw: Any, axes: list[Axis]) -> Comparison:
    where = f"compare[{index}]"
    raw = _mapping(path, where, raw)
    _check_keys(path, where, raw, _COMPARE_KEYS)
    if "a" not in raw or "b" not in raw:
        raise _fail(path, where, "needs both 'a' and 'b' (axis values of the two configurations)")
    a = _selector(path, f"{where}.a", raw["a"], axes)
    b = _selector(path, f"{where}.b", raw["b"], axes)
    if not a or a == b:
        raise _fail(path, where, "'a' and 'b' must fix some axes and differ")
    fixed = {axis for axis, _ in a + b}
    if "over" in raw:
        over = raw["over"]
        if not isinstance(over, list) or not all(isinstance(o, str) for o in over):
            raise _fail(path, f"{where}.over", "expected a list of axis names")
        unknown = [o for o in over if o not in {axis.name for axis in axes}]
        if unknown or SEED_AXIS in over or fixed & set(over):
            raise _fail(path, f"{where}.over", "must name axes other than the seed and those of a/b")
    else:
        over = [axis.name for axis in axes if axis.name not in fixed and axis.name != SEED_AXIS]
    name = raw.get("name") or f"{_describe(a)} vs {_describe(b)}"
    return Comparison(str(name), a, b, tuple(over))


def _describe(selector: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(label for _, label in selector)


def _engine(path: Path, raw: Any) -> EngineSettings:
    raw = _mapping(path, "engine", raw)
    _check_keys(path, "engine", raw, _field_names(EngineSettings))
    settings = EngineSettings(**{k: v for k, v in raw.items()})
    if settings.kind not in ENGINES:
        raise _fail(path, "engine.kind", f"{settings.kind!r} is not one of {', '.join(ENGINES)}")
    for key in ("max_parallel", "threads_per_run"):
        value = getattr(settings, key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise _fail(path, f"engine.{key}", f"expected a positive integer, got {value!r}")
    settings.ray = _mapping(path, "engine.ray", settings.ray)
    settings.slurm = _mapping(path, "engine.slurm", settings.slurm)
    return settings


def _report(path: Path, raw: Any) -> ReportSettings:
    raw = _mapping(path, "report", raw)
    _check_keys(path, "report", raw, _field_names(ReportSettings))
    settings = ReportSettings(**raw)
    if settings.test not in TESTS:
        raise _fail(path, "report.test", f"{settings.test!r} is not one of {', '.join(TESTS)}")
    if settings.seeds not in SEED_MODES:
        raise _fail(path, "report.seeds", f"{settings.seeds!r} is not one of {', '.join(SEED_MODES)}")
    if isinstance(settings.samples, bool) or not isinstance(settings.samples, int) or settings.samples < 100:
        raise _fail(path, "report.samples", f"expected an integer >= 100, got {settings.samples!r}")
    if not isinstance(settings.alpha, (int, float)) or not 0 < settings.alpha < 1:
        raise _fail(path, "report.alpha", f"expected a number in (0, 1), got {settings.alpha!r}")
    if not isinstance(settings.punct, bool):
        raise _fail(path, "report.punct", f"expected true/false, got {settings.punct!r}")
    if isinstance(settings.random_seed, bool) or not isinstance(settings.random_seed, int):
        raise _fail(path, "report.random_seed", f"expected an integer, got {settings.random_seed!r}")
    if settings.output is not None:
        settings.output = (path.parent / str(settings.output)).resolve()
    return settings


def _excluded(path: Path, raw: Any, axes: list[Axis]) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _fail(path, "exclude", "expected a list of {axis: value} mappings")
    return [dict(_selector(path, f"exclude[{i}]", entry, axes)) for i, entry in enumerate(raw)]


def expand(axes: list[Axis], shared: tuple[tuple[str, Any], ...], output_root: Path,
           excluded: Sequence[dict[str, str]] = ()) -> list[Run]:
    """The product of the axes in their order, minus the excluded points."""
    runs = []
    for combination in itertools.product(*(axis.values for axis in axes)):
        point = tuple((axis.name, value.label) for axis, value in zip(axes, combination))
        labels = dict(point)
        if any(all(labels[k] == v for k, v in rule.items()) for rule in excluded):
            continue
        overrides = dict(shared)
        for value in combination:
            overrides.update(value.overrides)
        directory = output_root.joinpath(*(f"{axis}={label}" for axis, label in point))
        runs.append(Run(point, tuple(overrides.items()), directory))
    return runs


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid file and expand its runs."""
    path = Path(path).resolve()
    raw = parse_yaml(read_text_file(path, GridError, "grid file"), str(path), GridError)
    raw = _mapping(path, "top level", raw)
    _check_keys(path, "top level", raw, _TOP_KEYS)
    for key in ("base", "axes"):
        if key not in raw:
            raise _fail(path, "top level", f"missing required key {key!r}")
    base = (path.parent / str(raw["base"])).resolve()
    if not base.is_file():
        raise _fail(path, "base", f"no config file {base}")
    name = str(raw.get("name") or path.stem)
    output_root = (path.parent / str(raw.get("output_root") or f"runs/{name}")).resolve()
    axes = [_axis(path, axis_name, spec) for axis_name, spec in _mapping(path, "axes", raw["axes"]).items()]
    if not axes:
        raise _fail(path, "axes", "name at least one axis")
    shared = _overrides(path, "set", raw.get("set"))
    runs = expand(axes, shared, output_root, _excluded(path, raw.get("exclude"), axes))
    if not runs:
        raise _fail(path, "exclude", "excludes every run")
    compare_raw = raw.get("compare") or []
    if not isinstance(compare_raw, list):
        raise _fail(path, "compare", "expected a list of {a: ..., b: ...} mappings")
    comparisons = [_comparison(path, i, entry, axes) for i, entry in enumerate(compare_raw)]
    return Grid(path, name, str(raw.get("description") or ""), base, output_root, axes, runs, comparisons,
                _engine(path, raw.get("engine")), _report(path, raw.get("report")))


def run_config(grid: Grid, run: Run):
    """The run's config (base + overrides) as ``kgparser train`` will see it."""
    try:
        return load_config(grid.base, run.set_arguments() + [f"output_dir={run.output_dir}"])
    except ConfigError as exc:
        raise GridError(f"{grid.path}: run {run.name}: {exc}") from None


def validate_runs(grid: Grid) -> None:
    """Check every run's config before any starts."""
    for run in grid.runs:
        run_config(grid, run)


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def system_options(config) -> dict:
    """The options the run's transition system resolves to, code defaults
    included, as plain JSON data.  A finished run's marker records them, so a
    run trained under a default that has changed since (which its config, and
    so its fingerprint, does not show) turns stale."""
    from ..transitions import get_system

    return json.loads(json.dumps(get_system(config.system.name, **config.system.options).options()))


def fingerprint(config) -> str:
    """Changes whenever the run would train something different.  Settings that
    do not change the model (output folder, threads, device, progress, logging)
    are left out, and input files count by name, so a grid's runs stay finished
    when the checkout moves (e.g. runs copied from a cluster)."""
    values = _flatten(config.to_dict())
    for key in IGNORED_IN_FINGERPRINT:
        values.pop(key, None)
    for key in INPUT_PATHS:
        if values.get(key):
            values[key] = Path(values[key]).name
    payload = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
