"""Fake runs for the experiment-grid tests (test_experiments.py,
test_experiment_report.py): the two subprocess commands of a run are replaced
by a function that writes what training and parsing would write, so the grid
machinery is tested without training."""
from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from kgparser.config import load_config
from kgparser.io.conllu import read_conllu, write_conllu
from kgparser.transitions.trees import random_tree


def write_gold(path: Path, sentences: int = 40, words: int = 8, seed: int = 7) -> Path:
    """Random trees (many of them non-projective) as CoNLL-U."""
    rng = random.Random(seed)
    blocks = []
    for s in range(sentences):
        heads = random_tree(words, rng, single_root=True)
        lines = [f"# sent_id = s{s}"]
        for d in range(1, words + 1):
            label = "root" if heads[d] == 0 else rng.choice(["nsubj", "obj", "amod"])
            lines.append(f"{d}\tw{s}_{d}\tw\tNOUN\t_\t_\t{heads[d]}\t{label}\t_\t_")
        blocks.append("\n".join(lines) + "\n\n")
    path.write_text("".join(blocks), encoding="utf-8")
    return path


def write_base(tmp_path: Path, gold: Path) -> Path:
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"data": {"train": str(gold), "dev": str(gold), "test": str(gold)},
                                    "training": {"epochs": 3}}), encoding="utf-8")
    return base


def write_grid(tmp_path: Path, body: dict, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"base": "base.yaml", "output_root": "runs", **body}, sort_keys=False),
                    encoding="utf-8")
    return path


#: error rate of the fake parser by oracle (the system makes no difference)
ERROR_RATE = {"static": 0.4, "dynamic": 0.1}


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def run_settings(command: list[str]) -> dict:
    return dict(command[i + 1].split("=", 1) for i, a in enumerate(command) if a == "--set")


def fake_call(calls: list):
    """Stands for ``subprocess.call`` of a run's ``train`` / ``parse`` commands."""
    def call(command, stdout=None, stderr=None, env=None, **options):
        calls.append(command)
        action = command[3]
        if action == "train":
            settings = run_settings(command)
            out = Path(settings["output_dir"])
            load_config(command[4], [f"{k}={v}" for k, v in settings.items()]).save(out / "config.yaml")
            (out / "last.pt").write_bytes(b"fake")
            (out / "best.pt").write_bytes(b"fake")
            records = [{"epoch": e, "loss": 1.0 / e, "dev_las": 0.5 + 0.1 * e, "dev_uas": 0.6 + 0.1 * e,
                        "epoch_seconds": 10.0 * e} for e in (1, 2, 3)]
            (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        elif action == "parse":
            out = Path(_option(command, "--output"))
            settings = dict(part.split("=", 1) for part in out.parent.relative_to(out.parents[3]).parts)
            rate = ERROR_RATE[settings["oracle"]]
            rng = random.Random(int(settings["seed"]))
            sentences = read_conllu(command[4])
            for sentence in sentences:
                heads = list(sentence.heads)
                labels = list(sentence.deprels)
                for d in range(1, sentence.n + 1):
                    if rng.random() < rate and heads[d] != 0:  # attach to the root: wrong, never a cycle
                        heads[d] = 0
                    elif rng.random() < 0.1:
                        labels[d] = "dep"
                sentence.set_tree(heads, labels)
            write_conllu(sentences, out)
        return 0
    return call


GRID = {
    "name": "tiny",
    "set": {"training.epochs": 2},
    "axes": {"system": ["arc-hybrid", "arc-eager"], "oracle": ["static", "dynamic"], "seed": [1, 2]},
    "compare": [{"name": "oracle", "a": {"oracle": "static"}, "b": {"oracle": "dynamic"}},
                {"name": "system", "a": {"system": "arc-hybrid"}, "b": {"system": "arc-eager"}}],
    "engine": {"max_parallel": 2},
    "report": {"samples": 1000},
}
