"""A whole training run: data, vocabularies, epochs, dev evaluation, checkpoints,
monitoring, and ``--resume``.

Every random choice of epoch ``e`` (shuffling, word and LSTM dropout,
exploration) is seeded from ``seed`` and ``e``, so resuming from the last
checkpoint (weights + optimizer state) ends with the same model as an
uninterrupted run on CPU.
"""
from __future__ import annotations

import random
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from ..config import Config, config_from_saved
from ..errors import KgparserError
from ..io.atomic import os_error_message, remove_stale_temporaries
from ..io.locking import training_lock
from ..io.progress import Progress, bar_line
from ..model import Model
from ..model.checkpoint import load_checkpoint
from ..model.tagger import TAG_COLUMNS
from . import distributed, run_folder
from .distributed import ONE_PROCESS, World, world_from_environment
from .front_end import learn_tokenizer, raw_text_scores
from .lemma_stage import learn_lemmatizer
from .monitor import MetricsFile, TensorBoard, flatten
from .run_folder import BEST, CONFIG_FILE, LAST, METRICS_FILE, TENSORBOARD_DIR, Start
from .trainer import Diverged, EpochStats, Trainer

#: sentences per batch when parsing dev and test data (no gradients: bigger is faster)
EVAL_BATCH_SIZE = 64
#: config keys that may change between a run and its resumption (``output_dir``:
#: the run may have been moved, or named by another spelling of the same path;
#: ``model.encoder.path``: the encoder may have moved, its fingerprint says whether it is the same)
RESUMABLE_CHANGES = {"training.epochs", "training.progress", "training.tensorboard", "threads", "device",
                     "output_dir", "model.encoder.path"}
#: the settings of the stage after the parser's epochs (kgparser/training/lemma_stage.py), which may
#: change on resume: a finished run resumed with them gets a lemmatizer
STAGE_AFTER_PARSER = "lemmatizer."
#: data files that may change on resume, with a note: a corrected path, or another evaluation set
NOTED_CHANGES = {"data.dev", "data.test"}


class TrainingError(KgparserError):
    """Training cannot start or continue (missing data, incompatible checkpoint)."""


@dataclass
class RunSummary:
    output_dir: Path
    epochs: int
    best_epoch: int
    best_las: float | None
    test: dict | None


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of everything random in one epoch (shuffling, dropout, exploration)."""
    return (seed * 1_000_003 + epoch) % (2 ** 31)


def _read(path: str | None, what: str, config: Config, require_tree: bool = True):
    from ..io.conllu import read_conllu

    if not path:
        return None
    if Path(path).is_dir() or not Path(path).exists():  # a FIFO, as <(zcat ...) gives, is read as a file
        problem = "is a folder, not a file" if Path(path).is_dir() else "no such file"
        raise TrainingError(f"data.{what}: {path}: {problem}")
    sentences = read_conllu(path, lenient=config.data.lenient, require_tree=require_tree)
    if not sentences:
        raise TrainingError(f"data.{what}: {path}: no sentences")
    return sentences


def _setup_torch(config: Config) -> None:
    if config.threads:
        torch.set_num_threads(config.threads)
    if config.device == "cuda" and not torch.cuda.is_available():
        raise TrainingError("device: cuda requested but no CUDA device is available")
    torch.manual_seed(config.seed)


def _scores(model: Model, sentences, batch_size: int = EVAL_BATCH_SIZE) -> dict:
    """UAS and LAS, and the accuracy of each column the model's tagger predicts, with
    those columns removed from the input first (as users' text comes)."""
    from ..evaluation.scores import evaluate
    from ..inference.parsing import parse_untagged

    scores = evaluate(sentences, parse_untagged(model, sentences, batch_size), nonprojective=False)
    return {"uas": scores.uas, "las": scores.las, **{c: scores.tag_accuracy(c) for c in model.tag_columns}}


def _check_resumable(saved: dict, config: Config, path: Path, log) -> None:
    """``saved`` is read with today's defaults, so that an option added since the
    checkpoint was written (with a default that trains as before) is no change.
    A changed dev or test file is allowed, with a note."""
    try:
        saved = config_from_saved(saved).to_dict()
    except KgparserError as error:
        raise TrainingError(f"{path}: cannot resume: {error}") from None
    old, new = flatten(saved), flatten(config.to_dict())
    changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k) and k not in RESUMABLE_CHANGES
                     and not k.startswith(STAGE_AFTER_PARSER))
    refused = [key for key in changed if key not in NOTED_CHANGES]
    if refused:
        raise TrainingError(f"{path}: cannot resume: the config differs in {', '.join(refused)}")
    for key in changed:
        log(f"note: resuming with {key} {new[key]} (the checkpoint's was {old[key]})"
            + ("; best.pt is chosen by dev LAS on either file" if key == "data.dev" else ""))


def train(config: Config, resume: bool = False, log=print, overwrite: bool = False,
          config_file: str | Path | None = None) -> RunSummary:
    """Train as configured; with ``resume``, continue from ``output_dir/last.pt``.

    What a run may do to its folder (someone else's files, a trained model,
    ``config_file``: the config file read) is :mod:`kgparser.training.run_folder`'s;
    every data file is read and checked before the folder is touched.  The
    folder is locked while the run writes it
    (:func:`kgparser.io.locking.training_lock`): a second trainer is refused.
    Started by ``torchrun``, the processes train data-parallel and rank 0
    alone writes the folder (:mod:`kgparser.training.distributed`)."""
    world = world_from_environment()
    _setup_torch(config)
    if world.distributed:
        distributed.start(world, config.device)
    try:
        if not world.main:  # resumes as rank 0 does: from last.pt where there is one
            out = Path(config.output_dir)
            start = Start(resume=resume and (out / LAST).exists(), clear=False)
            return _train_locked(config, out, start, lambda line: None, world)
        out = _output_folder(config, resume)
        with training_lock(out):
            removed = remove_stale_temporaries(out)
            if removed:
                log(f"removed {len(removed)} temporary file(s) left by a killed run: "
                    f"{', '.join(p.name for p in removed)}")
            start = run_folder.plan_start(out, resume=resume, overwrite=overwrite, config_file=config_file)
            return _train_locked(config, out, start, log, world)
    finally:
        if world.distributed:
            distributed.stop()


def _output_folder(config: Config, resume: bool) -> Path:
    out = Path(config.output_dir)
    if out.exists() and not out.is_dir():
        raise TrainingError(f"output_dir: {out}: is a file, not a folder")
    if resume and not out.exists():
        raise TrainingError(f"{out / LAST}: no such checkpoint (the folder {out} does not exist); nothing to resume")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TrainingError(f"output_dir: cannot create {os_error_message(out, error)}") from None
    return out


def _train_locked(config: Config, out: Path, start: Start, log, world: World) -> RunSummary:
    """Read and check the data, build the trainer, and only then write the folder and train."""
    cfg = config.training
    train_sentences, dev_sentences, test_sentences = _training_data(config, log, with_test=world.main)
    trainer, start_epoch, best_las, best_epoch = _trainer(config, out, start.resume, train_sentences, world, log)
    examples, usable = _usable_examples(trainer, train_sentences, config)
    metrics = _begin_folder(config, out, start, start_epoch, log) if world.main else None
    board = TensorBoard(out / TENSORBOARD_DIR, enabled=cfg.tensorboard and world.main)
    skipped_share = 1 - len(usable) / len(examples)
    try:
        learn_tokenizer(trainer.model, config, train_sentences, dev_sentences, metrics, board, log)
        log(_start_line(config, trainer.model, examples, world))
        for epoch in range(start_epoch, cfg.epochs):
            try:
                stats, seconds = _train_epoch(trainer, usable, epoch, config, world)
            except Diverged as error:
                raise _diverged(error, epoch + 1, config, out) from None
            if not world.main:
                continue
            assert metrics is not None  # the main process writes the metrics
            record = _epoch_record(trainer, stats, seconds, skipped_share, epoch + 1)
            best_las, best_epoch = _evaluate_and_save(trainer, dev_sentences, epoch + 1, record,
                                                      best_las, best_epoch, out, metrics, world)
            _board_epoch(board, record, epoch + 1)
            log(_epoch_line(record))
        if world.main:
            learn_lemmatizer(out / BEST, config, train_sentences, dev_sentences, metrics, board, log,
                             encoder=config.model.encoder.path)
        test = _final_test(config, out, test_sentences, metrics, best_epoch, log)
        board.hparams(flatten(config.to_dict()), {"hparam/best_dev_las": best_las,
                                                  "hparam/test_las": test["las"] if test else None})
    finally:
        board.close()
    return RunSummary(out, cfg.epochs, best_epoch, best_las, test)


def _usable_examples(trainer: Trainer, train_sentences, config: Config) -> tuple[list, list]:
    """The training examples, and those the run trains on: all but the trees the
    system cannot build, unless ``training.unbuildable`` is ``dynamic``."""
    examples = trainer.examples(train_sentences)
    usable = [e for e in examples if e.buildable or config.training.unbuildable == "dynamic"]
    if not usable:
        raise TrainingError(f"data.train: {config.data.train}: no trainable sentence: all {len(examples)} trees "
                            f"are skipped ({config.system.name} cannot build them); use training.unbuildable: "
                            f"dynamic, data.projectivize: true or another system")
    return examples, usable


def _begin_folder(config: Config, out: Path, start: Start, start_epoch: int, log) -> MetricsFile:
    """Make the run's folder ready to write (:func:`run_folder.begin`), save the
    config where the start calls for it; returns the metrics file, whose lines
    after ``start_epoch`` a resumed run drops."""
    run_folder.begin(out, start, log)
    if start.write_config:
        config.save(out / CONFIG_FILE)
    return MetricsFile(out / METRICS_FILE, keep_up_to_epoch=start_epoch if start.resume else None, log=log)


def _start_line(config: Config, model: Model, examples: list, world: World) -> str:
    """The line announcing the run: system, oracle, data, labels, transitions and processes."""
    cfg = config.training
    unbuildable = sum(1 for e in examples if not e.buildable)
    return (f"training {config.system.name} ({cfg.oracle} oracle) on {len(examples)} sentences, "
            f"{sum(e.sentence.n for e in examples)} words; {unbuildable} trees the system "
            f"cannot build are {'skipped' if cfg.unbuildable == 'skip' else 'trained with the dynamic oracle'}; "
            f"{len(model.inventory.labels)} labels, {len(model.inventory.columns)} transitions"
            + (f"; {world.size} processes, {cfg.batch_size} sentences per batch each" if world.distributed else ""))


def _board_epoch(board: TensorBoard, record: dict, epoch: int) -> None:
    """The epoch's training figures and dev scores on TensorBoard."""
    board.scalars({"train/loss": record["loss"], "train/wrong_followed": record["wrong_followed"],
                   "train/skipped": record["skipped"], "train/oracle_seconds": record["oracle_seconds"],
                   "train/oracle_fallbacks": record["oracle_fallbacks"],
                   "train/tokens_per_second": record["tokens_per_second"], "train/lr": record["lr"],
                   "dev/uas": record.get("dev_uas"), "dev/las": record.get("dev_las"),
                   **{f"dev/{c}": record.get(f"dev_{c}") for c in TAG_COLUMNS}}, epoch)


def _final_test(config: Config, out: Path, test_sentences, metrics: MetricsFile | None, best_epoch: int,
                log) -> dict | None:
    """The test scores of the best checkpoint, written to the metrics file and logged
    (None without test data)."""
    test = _test_scores(config, out, test_sentences, log) if test_sentences else None
    if test:
        assert metrics is not None  # only the main process reads the test data
        metrics.write({"final": True, "test_uas": test["uas"], "test_las": test["las"],
                       **{f"test_{c}": test[c] for c in TAG_COLUMNS if c in test},
                       **{f"test_raw_{name}": value for name, value in test.get("raw", {}).items()},
                       "best_epoch": best_epoch})
        log(f"test (best epoch {best_epoch}): UAS {100 * test['uas']:.2f} LAS {100 * test['las']:.2f}")
        if "raw" in test:
            log("test from raw text (aligned F1): " + ", ".join(f"{name} {100 * value:.2f}"
                                                                for name, value in test["raw"].items()))
    return test


def _trainer(config: Config, out: Path, resume: bool, train_sentences, world: World,
             log) -> tuple[Trainer, int, float | None, int]:
    """A trainer with a new model, or with the model, optimizer and averages of
    ``last.pt``; returns it with the epochs done and the best dev LAS and epoch."""
    start_epoch, best_las, best_epoch = 0, None, 0
    if resume:
        last = out / LAST
        data = load_checkpoint(last)
        if "training" not in data:
            raise TrainingError(f"{last}: has no training state to resume from")
        _check_resumable(data["model"]["config"], config, last, log)
        model = Model.from_data(data["model"], encoder=config.model.encoder.path)
        model.config = config
        start_epoch = data["epoch"]
        best_las, best_epoch = data["training"]["best_las"], data["training"]["best_epoch"]
        trained_by = data["training"].get("world_size", 1)
        if trained_by != world.size:
            log(f"note: {last} was trained by {trained_by} process(es), resumed by {world.size}: "
                f"the data order differs from an uninterrupted run from here on")
    else:
        model = Model.build(config, train_sentences)
    model.max_train_length = max((s.n for s in train_sentences), default=None)
    model.to(config.device)
    if world.distributed:
        distributed.broadcast_parameters(model.network.parameters())
    trainer = Trainer(model, config)
    if resume:
        trainer.optimizer.load_state_dict(data["training"]["optimizer"])
        torch.set_rng_state(data["training"]["torch_rng"])
        if trainer.average is not None:
            trainer.average.restore(data["training"]["average"])
    if world.distributed:
        trainer.synchronize = distributed.GradientAverager(model.network.parameters(), world,
                                                           row_sparse=model.network.embedding_tables())
    return trainer, start_epoch, best_las, best_epoch


def _training_data(config: Config, log, with_test: bool) -> tuple[list, list | None, list | None]:
    """The training sentences (cut and projectivized as configured), the dev
    sentences and (``with_test``) the test sentences: every data file is read,
    and so checked, before the first epoch."""
    if not config.data.train:
        raise TrainingError("data.train: no training file given")
    train_sentences = _read(config.data.train, "train", config)
    if config.data.max_train_sentences is not None:
        train_sentences = train_sentences[:config.data.max_train_sentences]
    if not train_sentences:
        raise TrainingError(f"data.train: {config.data.train}: no sentences")
    if config.data.projectivize:
        from ..projectivize import projectivize_sentences

        summary = projectivize_sentences(train_sentences)
        log(f"projectivized the training trees: {summary}")
    dev_sentences = _read(config.data.dev, "dev", config)
    return train_sentences, dev_sentences, _read(config.data.test, "test", config) if with_test else None


def _epoch_record(trainer: Trainer, stats: EpochStats, seconds: float, skipped_share: float, epoch: int) -> dict:
    return {
        "epoch": epoch,
        "loss": stats.loss / max(stats.scored, 1),
        "wrong_followed": stats.wrong_followed / max(stats.transitions, 1),
        "skipped": skipped_share,
        "oracle_seconds": stats.oracle_seconds,
        # share of oracle calls answered approximately (an oracle's work budget ran out)
        "oracle_fallbacks": stats.oracle_fallbacks / max(stats.scored, 1),
        "tokens_per_second": stats.tokens / seconds if seconds else None,
        "epoch_seconds": seconds,
        # CPU time of the process: throughput unaffected by other load on the machine
        "tokens_per_cpu_second": stats.tokens / stats.cpu_seconds if stats.cpu_seconds else None,
        "lr": trainer.optimizer.param_groups[0]["lr"],
    }


def _diverged(error: Diverged, epoch: int, config: Config, out: Path) -> TrainingError:
    """The one-line message of a run that diverged: where, why, what was kept, what to try."""
    last = out / LAST
    kept = (f"the last good checkpoint, {last} (epoch {epoch - 1}), is kept" if epoch > 1 and last.exists()
            else "no checkpoint was written")
    return TrainingError(f"{out}: training diverged in epoch {epoch}: {error}; {kept}; "
                         f"train again with a lower training.lr (now {config.training.lr:g}) "
                         f"or training.clip (now {config.training.clip:g})")


def _evaluate_and_save(trainer: Trainer, dev_sentences, epoch: int, record: dict, best_las: float | None,
                       best_epoch: int, out: Path, metrics: MetricsFile,
                       world: World = ONE_PROCESS) -> tuple[float | None, int]:
    """After ``epoch``: dev scores into ``record``, the record into the metrics
    file, ``best.pt`` if they improved (always without dev data), ``last.pt``;
    returns the best LAS and epoch.  The metrics line goes first: a kill before
    ``last.pt`` is replaced resumes from the epoch before, whose ``--resume``
    drops this line, so no epoch's line is ever lost."""
    model = trainer.model
    with _evaluated_weights(trainer) as average_state:
        dev = None
        if dev_sentences:
            started = time.perf_counter()
            dev = _scores(model, dev_sentences)
            record.update({f"dev_{column}": dev[column] for column in model.tag_columns})
            record.update(dev_uas=dev["uas"], dev_las=dev["las"],
                          parse_tokens_per_second=sum(s.n for s in dev_sentences) / (time.perf_counter() - started))
        metrics.write(record)
        if best_las is None or dev is None or dev["las"] > best_las:
            best_las, best_epoch = (dev["las"] if dev else None), epoch
            model.save(out / BEST, epoch, dev)
        training_state = {"optimizer": trainer.optimizer.state_dict(), "torch_rng": torch.get_rng_state(),
                          "best_las": best_las, "best_epoch": best_epoch, "world_size": world.size}
        if average_state is not None:
            training_state["average"] = average_state
        model.save(out / LAST, epoch, dev, training_state)
    return best_las, best_epoch


@contextmanager
def _evaluated_weights(trainer: Trainer) -> Iterator[dict | None]:
    """The weights a run evaluates and saves: the trained ones, or their moving
    average (``training.ema_decay``); then yields what ``--resume`` needs to
    put the trained weights back."""
    if trainer.average is None:
        yield None
        return
    with trainer.average.swapped_in() as current:
        yield trainer.average.state(current)


def _train_epoch(trainer: Trainer, examples: list, epoch: int, config: Config,
                 world: World = ONE_PROCESS) -> tuple[EpochStats, float]:
    """One epoch over this process's share of the batches; the statistics are
    summed over the processes.  The batches are drawn from the epoch's seed
    alike in every process; dropout and exploration then follow a seed of the
    process's own (rank 0's is the epoch seed, so one process trains exactly
    as without ``torchrun``)."""
    cfg = config.training
    seed = epoch_seed(config.seed, epoch)
    rng = random.Random(seed)
    lengths = [e.sentence.n for e in examples]
    batches = distributed.share(length_batches(lengths, cfg.batch_size, rng), world,
                                cost=lambda batch: sum(lengths[i] for i in batch))
    if world.rank:
        seed = epoch_seed(config.seed + world.rank * 1_000_033, epoch)
        rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    explore = cfg.oracle != "static" and epoch >= cfg.explore_after_epochs
    total = EpochStats()
    tokens = sum(examples[i].sentence.n for batch in batches for i in batch)
    progress = Progress(lambda seconds: bar_line(f"epoch {epoch + 1}/{cfg.epochs}", total.tokens, tokens, seconds,
                                                 f"loss {total.loss / max(total.scored, 1):.4f} "
                                                 f"{total.tokens / max(seconds, 1e-9):.0f} tok/s"),
                        cfg.progress and world.main and sys.stderr.isatty(), keep=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    for batch in batches:
        total.add(trainer.train_batch([examples[i] for i in batch], explore, rng, np_rng))
        progress.update()
    progress.close()
    total.cpu_seconds = time.process_time() - cpu_started
    seconds = time.perf_counter() - started
    if world.distributed:
        total = total.summed_over_processes()
    return total, seconds


def length_batches(lengths: list[int], batch_size: int, rng: random.Random, pool: int = 32) -> list[list[int]]:
    """Shuffled batches of sentences of similar length: shuffle, sort pools of
    ``pool`` batches by length, cut them into batches, shuffle the batches
    (less padding for the BiLSTM, still a random order)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    span = batch_size * pool
    for start in range(0, len(order), span):
        chunk = sorted(order[start:start + span], key=lengths.__getitem__)
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def _epoch_line(record: dict) -> str:
    line = (f"epoch {record['epoch']}: loss {record['loss']:.4f}, wrong followed "
            f"{100 * record['wrong_followed']:.1f}%, {record['tokens_per_second'] or 0:.0f} tok/s, "
            f"oracle {record['oracle_seconds']:.1f}s")
    if record["oracle_fallbacks"]:
        line += f" ({100 * record['oracle_fallbacks']:.2f}% of calls approximated)"
    if "dev_las" in record:
        line += f"; dev UAS {100 * record['dev_uas']:.2f} LAS {100 * record['dev_las']:.2f}"
        line += "".join(f" {c.upper()} {100 * record[f'dev_{c}']:.2f}" for c in TAG_COLUMNS
                        if record.get(f"dev_{c}") is not None)
    return line


def _test_scores(config: Config, out: Path, test_sentences, log) -> dict:
    """The best checkpoint's test scores on gold words and, where it has a
    tokenizer, from the test file's raw text (``raw``)."""
    from ..inference.tags import UntaggedInput

    model = Model.load(out / BEST, encoder=config.model.encoder.path).to(config.device)
    scores = _scores(model, test_sentences)
    if model.tokenizer is not None:
        try:
            scores["raw"] = raw_text_scores(model, test_sentences, EVAL_BATCH_SIZE)
        except UntaggedInput as error:
            log(f"note: the test file's raw text is not scored: {error}")
    return scores
