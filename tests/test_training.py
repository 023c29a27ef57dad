"""Whole training runs on tiny data: outputs, checkpoints (plain data, atomic),
resume equivalence, monitoring files, trees a system cannot build."""
import json

import pytest
import torch
import yaml
from test_model import TINY_MODEL, tiny_conllu

from kgparser.config import config_from_dict
from kgparser.inference.parser import Parser
from kgparser.io.progress import Progress, bar_line, clock
from kgparser.training import TrainingError, train

torch.set_num_threads(1)

NON_PROJECTIVE = """1\ta\t_\tA\t_\t_\t3\tobj\t_\t_
2\tb\t_\tB\t_\t_\t4\tnsubj\t_\t_
3\tc\t_\tC\t_\t_\t0\troot\t_\t_
4\td\t_\tA\t_\t_\t1\tamod\t_\t_

"""


def tiny_run(tmp_path, name="run", epochs=2, extra_train="", **sections):
    (tmp_path / "train.conllu").write_text(tiny_conllu(12, seed=1) + extra_train, encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(tiny_conllu(4, seed=2), encoding="utf-8")
    raw = {"output_dir": str(tmp_path / name), "threads": 1,
           "data": {"train": str(tmp_path / "train.conllu"), "dev": str(tmp_path / "dev.conllu"),
                    "test": str(tmp_path / "dev.conllu")},
           "model": dict(TINY_MODEL, word_dropout=0.25, lstm_layers=2, lstm_dropout=0.2),
           "training": {"epochs": epochs, "batch_size": 4, "explore_after_epochs": 1, "p_agg": 0.3,
                        "tensorboard": False, "progress": False}}
    for key, value in sections.items():
        raw.setdefault(key, {}).update(value) if isinstance(value, dict) else raw.__setitem__(key, value)
    return config_from_dict(raw)


def test_run_writes_config_checkpoints_and_metrics(tmp_path):
    config = tiny_run(tmp_path, training={"tensorboard": True})
    summary = train(config, log=lambda line: None)
    out = tmp_path / "run"
    assert yaml.safe_load((out / "config.yaml").read_text())["training"]["epochs"] == 2
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records[:2]] == [1, 2]
    for key in ("loss", "dev_uas", "dev_las", "wrong_followed", "skipped", "oracle_seconds",
                "oracle_fallbacks", "tokens_per_second", "lr"):
        assert key in records[0]
    assert records[0]["oracle_fallbacks"] == 0
    assert "test_las" in records[-1]
    assert list((out / "tensorboard").rglob("events.out.tfevents*"))
    assert summary.best_epoch in (1, 2) and summary.test is not None
    for name in ("best.pt", "last.pt"):
        data = torch.load(out / name, weights_only=True)
        assert data["format"] == "kgparser-checkpoint"
        assert data["model"]["actions"] == ["shift", "left", "right"]
    assert "training" not in torch.load(out / "best.pt", weights_only=True)
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("work_limit, approximated", [(0, True), (200_000, False)])
def test_metrics_report_the_share_of_approximated_oracle_calls(tmp_path, work_limit, approximated):
    """Attardi's dynamic oracle answers approximately once its work budget is
    spent (``work_limit: 0``: on every call with a choice); the share shows
    in the metrics."""
    config = tiny_run(tmp_path, epochs=1, system={"name": "attardi", "options": {"work_limit": work_limit}})
    train(config, log=lambda line: None)
    record = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert (0 < record["oracle_fallbacks"] <= 1) if approximated else record["oracle_fallbacks"] == 0


def test_checkpoint_round_trip_gives_the_same_parses(tmp_path):
    config = tiny_run(tmp_path, epochs=1)
    train(config, log=lambda line: None)
    parser = Parser.load(tmp_path / "run" / "last.pt")
    again = Parser.load(tmp_path / "run" / "last.pt")
    source = tmp_path / "dev.conllu"
    first = [s.to_conllu() for s in parser.parse(source)]
    assert first == [s.to_conllu() for s in again.parse(source)]
    for key, value in parser.model.network.state_dict().items():
        assert torch.equal(value, again.model.network.state_dict()[key])


@pytest.mark.parametrize("ema_decay", [0.0, 0.9])
def test_resume_ends_with_the_same_model(tmp_path, ema_decay):
    training = {"ema_decay": ema_decay}
    train(tiny_run(tmp_path, "whole", epochs=3, training=training), log=lambda line: None)
    train(tiny_run(tmp_path, "parts", epochs=1, training=training), log=lambda line: None)
    train(tiny_run(tmp_path, "parts", epochs=3, training=training), resume=True, log=lambda line: None)
    whole = torch.load(tmp_path / "whole" / "last.pt", weights_only=True)
    parts = torch.load(tmp_path / "parts" / "last.pt", weights_only=True)
    assert parts["epoch"] == whole["epoch"] == 3
    for key, value in whole["model"]["weights"].items():
        assert torch.allclose(value, parts["model"]["weights"][key], atol=1e-6), key
    if ema_decay:
        assert parts["training"]["average"]["updates"] == whole["training"]["average"]["updates"] > 0
        for trained, again in zip(whole["training"]["average"]["current_weights"],
                                  parts["training"]["average"]["current_weights"]):
            assert torch.allclose(trained, again, atol=1e-6)
    epochs = [json.loads(line).get("epoch") for line in (tmp_path / "parts" / "metrics.jsonl").read_text().splitlines()]
    assert epochs[:3] == [1, 2, 3]


def test_resume_refuses_a_different_model(tmp_path):
    train(tiny_run(tmp_path, epochs=1), log=lambda line: None)
    changed = tiny_run(tmp_path, epochs=2, model={"mlp_hidden": 8})
    with pytest.raises(TrainingError, match="model.mlp_hidden"):
        train(changed, resume=True, log=lambda line: None)
    with pytest.raises(Exception, match="no such checkpoint"):
        train(tiny_run(tmp_path, "elsewhere", epochs=1), resume=True, log=lambda line: None)


def test_resume_from_a_checkpoint_older_than_an_option(tmp_path):
    train(tiny_run(tmp_path, epochs=1), log=lambda line: None)
    last = tmp_path / "run" / "last.pt"
    data = torch.load(last, weights_only=True)
    del data["model"]["config"]["model"]["input_dropout"]  # written before the option existed
    torch.save(data, last)
    assert train(tiny_run(tmp_path, epochs=2), resume=True, log=lambda line: None).best_epoch in (1, 2)


@pytest.mark.parametrize("policy, skipped", [("skip", True), ("dynamic", False)])
def test_trees_the_system_cannot_build(tmp_path, policy, skipped):
    config = tiny_run(tmp_path, epochs=1, extra_train=NON_PROJECTIVE,
                      training={"unbuildable": policy, "oracle": "static"})
    lines = []
    train(config, log=lines.append)
    record = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert (record["skipped"] > 0) == skipped
    assert any("1 trees the system cannot build" in line for line in lines)


def test_projectivize_option_makes_every_tree_buildable(tmp_path):
    config = tiny_run(tmp_path, epochs=1, extra_train=NON_PROJECTIVE, data={"projectivize": True})
    lines = []
    train(config, log=lines.append)
    assert any("0 trees the system cannot build" in line for line in lines)
    assert any("projectivized the training trees: 1 of 13 trees changed" in line for line in lines)


def test_progress_bar_shows_counts_and_eta():
    import io

    stream, done = io.StringIO(), [0]
    progress = Progress(lambda seconds: bar_line("epoch 1/2", done[0], 10, seconds, "loss 0.1"), stream=stream,
                        interval=0.0, keep=True)
    done[0] = 5
    progress.update()
    progress.close()
    text = stream.getvalue()
    assert "epoch 1/2" in text and "5/10" in text and "10/10" not in text
    assert "loss 0.1" in text and "<" in text and text.endswith("\n")
    assert bar_line("e", 5, 10, 3725.0).endswith(" 50% 1:02:05<1:02:05") and clock(59.6) == "1:00"


def test_exploration_policy():
    import random

    from kgparser.training.exploration import ExplorationPolicy

    policy = ExplorationPolicy(margin=1.0, p_agg=0.25)
    rng = random.Random(0)
    assert policy.choose(3, 5.0, -1, 0.0, rng) == 3          # nothing wrong is legal
    assert policy.choose(3, 5.0, 7, 6.0, rng) == 7           # the wrong one scores higher: always
    assert policy.choose(3, 5.0, 7, 3.5, rng) == 3           # beyond the margin: never
    within = [policy.choose(3, 5.0, 7, 4.5, rng) for _ in range(4000)]
    assert abs(within.count(7) / len(within) - 0.25) < 0.03  # within the margin: with p_agg
