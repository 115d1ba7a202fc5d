"""Training a seq2seq experiment: data -> vocabularies -> model -> updates -> checkpoints.

Adam with gradient clipping (``train.clip``; 0 or null: none); learning-rate schedule
(:mod:`attnkit.training.schedules`) ``plateau`` (cut on a stalled dev metric), ``cosine``
(down to ``min_lr`` by the end of the epochs or of the time budget), ``noam`` (warm-up then
1/sqrt decay) or ``constant``;
early stopping on the dev metric; a progress bar with loss, token accuracy and
target tokens/s (``train.progress``, drawn only when stderr is a terminal), and the same in
TensorBoard (``train.tensorboard``, :mod:`attnkit.training.tensorboard`) with dev metrics and
attention heatmaps. Every line logged also goes to ``run_dir/train.log``, and the training
and dev figures to ``run_dir/metrics.jsonl`` (:mod:`attnkit.training.run_log`).
``run_dir/best`` holds what decoding needs (weights, config, vocabularies, counters);
``run_dir/last`` also the optimizer, schedule and RNG, and ``resume=True`` continues from it
exactly where it stopped, once every part of its trainer state is checked against this run
(:mod:`attnkit.training.resume`) and its config against the saved one
(:mod:`attnkit.training.resume_config`).
An update whose loss or gradient norm is NaN or inf is skipped, and
``train.max_bad_updates`` of them in a row end the run (:mod:`attnkit.training.guard`).
Started by ``torchrun --nproc_per_node N -m attnkit train CONFIG``, N processes share every
batch through DistributedDataParallel and rank 0 evaluates and saves
(:mod:`attnkit.training.distributed`).

Checkpoint averaging (``train.average_checkpoints: N``, N >= 2): the weights of
the N best dev evaluations are kept in ``run_dir/top/step-XXXXXXX`` (pruned to N
after every evaluation); at the end their element-wise mean is saved as
``run_dir/averaged``, scored on dev, and the score is logged and written to its
``trainer.json``. The means of the 2, 3, .. N best are all scored, and ``averaged``
holds the best of them, or the best single checkpoint where no mean beats it
(``choice`` in its trainer.json says which). Every one of these directories loads with
``attnkit.load`` (or ``Translator.load``).

The updates and evaluations run in the training loop shared by every family
(:mod:`attnkit.training.loop`); what is seq2seq's in them is
:mod:`attnkit.training.seq2seq_adapter`. The trainer sets the run up (model, vocabularies,
backend, DDP) and finishes it (the final checkpoints, averaging). What it trains is a
:class:`~attnkit.checkpoint.seq2seq.Seq2SeqBundle` (model, config, tokenizers and vocabularies),
which is also what it saves. It is given its dev scorer (``dev_scorer``, called with the
bundle; the commands pass :func:`attnkit.evaluation.evaluate.evaluate_translator`): training
imports nothing of evaluation.
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import torch
from tqdm import tqdm

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.checkpoint.seq2seq import Seq2SeqBundle
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.registry import build_splits, task_metric
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError
from attnkit.experiment import ExperimentConfig
from attnkit.training import distributed, rundir, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.distributed import Distributed
from attnkit.training.loop import LoopSettings, TrainingLoop
from attnkit.training.run_log import RunLog
from attnkit.training.seq2seq_adapter import DevScorer, Seq2SeqAdapter
from attnkit.training.seq2seq_checkpoints import RunCheckpoints
from attnkit.training.seq2seq_setup import checkpoint_bytes, starting_point, training_examples


class Trainer:
    def __init__(
        self,
        cfg: ExperimentConfig,
        splits: Splits | None = None,
        log_fn=None,
        *,
        dev_scorer: DevScorer,
    ):
        self.cfg, self.dev_scorer = cfg, dev_scorer
        self.run_dir = cfg.run_dir
        self.log = log_fn or _log
        self.signals = rundir.StopSignals()  # entered by train()
        self.dist: Distributed | None = None  # set by train() under torchrun
        # off until train() opens the run's own
        self.board = tb.Board(cfg.run_dir / rundir.LOG_NAME, False, self.log, "tokens")
        tc = cfg.train
        if tc.threads:
            torch.set_num_threads(tc.threads)
        self.device = resolve_device(tc.device)
        metric = task_metric(cfg.data)  # the task's, or the parallel task's data.metric
        self.family, self.metric = metric.family, metric.key
        self.higher_is_better = metric.higher_is_better
        self.checkpoints = RunCheckpoints(
            cfg, self.metric, self.higher_is_better, lambda message: self.log(message)
        )
        self.splits = splits or build_splits(cfg.data)
        for name in ("train", "dev"):
            if not getattr(self.splits, name):
                raise AttnkitError(f"the {name} split of task {cfg.data.task!r} is empty")

    # ---- the loop ------------------------------------------------------------
    def train(self, resume: bool = False, overwrite: bool = False) -> Path:
        """Train until epochs, patience or time budget run out; returns the best checkpoint.

        The run directory is locked meanwhile; a fresh run refuses one holding checkpoints unless
        ``overwrite``. SIGINT/SIGTERM save ``last`` after the current update and raise
        :class:`attnkit.errors.TrainingInterrupted`.
        """
        with distributed.start(self.cfg.train.device) as self.dist:
            if self.dist is not None:
                self.device = self.dist.device
            board_on = self.cfg.train.tensorboard and self._is_main  # rank 0 logs for all
            with (
                self._claim(resume, overwrite),
                rundir.StopSignals() as signals,
                tb.Board(self.run_dir / rundir.LOG_NAME, board_on, self.log, "tokens") as board,
            ):
                self.signals, self.board = signals, board
                return self._train(resume)

    @property
    def _is_main(self) -> bool:
        """True in the process that logs and writes the run directory (rank 0 under DDP)."""
        return self.dist is None or self.dist.is_main

    @contextmanager
    def _claim(self, resume: bool, overwrite: bool):
        """Hold the run directory (rank 0 alone under DDP, the others wait) and open its logs."""
        with ExitStack() as stack:
            claim = rundir.claim_run_dir(self.run_dir, resume, overwrite, self.log)
            self._on_main(lambda: stack.enter_context(claim))
            self.log = stack.enter_context(RunLog(self.run_dir, self.log, self._is_main, resume))
            yield

    def _on_main(self, fn, default=None):
        """``fn()`` in the main process; under DDP the others wait, and all stop if it fails."""
        return distributed.on_main(self.dist, fn, default)

    def _train(self, resume: bool) -> Path:
        tc, d = self.cfg.train, self.cfg.data
        bundle, state, optimizer, scheduler = distributed.on_all(
            self.dist,
            lambda: starting_point(
                self.cfg, self.splits, self.device, resume, self.log, self._is_main
            ),
        )
        self.board.start(state.step)
        self._on_main(lambda: rundir.check_space(self.run_dir, checkpoint_bytes(bundle.model)))
        if state.epoch >= tc.epochs:
            self.log(
                f"{self.run_dir}: all {tc.epochs} epochs are done; raise train.epochs to train on"
            )
            return self.run_dir / "best"
        state.finished = False
        model = bundle.model
        # resolved before DDP wraps the model: every rank runs the same computation
        self.backend = resolve_backend(tc.backend, self.device, next(model.parameters()).dtype)
        model.set_backend(self.backend)
        self.checkpoints.backend_record = self.backend.record()
        self.log(model.describe_backend(self.backend))
        examples = training_examples(bundle.sides, self.splits, self.cfg)
        self.log(
            f"{d.task}: {len(self.splits.train)} train / {len(self.splits.dev)} dev / "
            f"{len(self.splits.test)} test pairs; vocab {len(bundle.sides.src_vocab)} -> "
            f"{len(bundle.sides.tgt_vocab)}; {sum(p.numel() for p in model.parameters()):,} "
            f"parameters; device {self.device}"
        )
        train_model = model
        if self.dist is not None:
            seed = self.cfg.train.seed * 1000003 + self.dist.rank * 7919 + state.step
            train_model = distributed.start_data_parallel(
                self.dist, bundle, examples, seed, self.log
            )
        adapter = Seq2SeqAdapter(
            self.cfg,
            bundle,
            train_model,
            optimizer,
            scheduler,
            examples,
            self.checkpoints,
            lambda: self._score_dev(bundle),
            self.board,
            self.device,
            self.dist,
            tc.progress and self._is_main,
        )
        self.log.start(state, time.time() - state.elapsed_s, self.board)  # RUN/metrics.jsonl
        state.planned_epochs = tc.epochs
        self._loop(adapter).run(state)  # raises TrainingInterrupted where a signal stops it
        state.finished = True
        score_dev = lambda: self._score_dev(bundle)[0]  # noqa: E731
        self._on_main(
            lambda: self.checkpoints.finish(bundle, state, optimizer, scheduler, score_dev)
        )
        return self.run_dir / "best"

    def _loop(self, adapter: Seq2SeqAdapter) -> TrainingLoop:
        """The training loop over ``adapter``; under DDP every rank agrees on signals and the
        clock, rank 0 evaluates and saves, and every rank takes its decision to stop."""
        return TrainingLoop(
            adapter,
            LoopSettings.of(self.cfg.train),
            self.run_dir,
            self.signals,
            self.board,
            self.log,
            sync=self._sync,
            on_main=self._on_main,
            agree=lambda stop: self._agree(stop, adapter.optimizer),
        )

    def _score_dev(self, bundle: Seq2SeqBundle):
        """Greedy dev (metrics, sources, references, translations) of the weights it holds."""
        return self.dev_scorer(bundle, self.family, self.splits.dev, beam_size=1)

    def _sync(self, start: float) -> tuple[bool, float]:
        """(stop for a signal?, seconds since ``start``); under DDP the same on every rank."""
        elapsed = time.time() - start
        if self.dist is None:
            return self.signals.requested, elapsed
        signum, elapsed = self.dist.agree(self.signals.signum, elapsed)
        if signum is not None and self.signals.signum is None:
            self.signals.signum = signum  # another rank's signal: this one stops with it
        return signum is not None, elapsed

    def _agree(self, stop: bool, optimizer) -> bool:
        """Under DDP, rank 0's decision to stop and its plateau schedule's rate, on every rank."""
        if self.dist is None:
            return stop
        flag, lr = self.dist.from_main([float(stop), optimizer.param_groups[0]["lr"]])
        schedules.set_rate(optimizer, lr)
        return bool(flag)


def _log(message: str) -> None:
    """Print above any progress bar, at once (also when stdout is a file)."""
    tqdm.write(message)
    sys.stdout.flush()


def train_experiment(
    cfg: ExperimentConfig, resume: bool = False, overwrite: bool = False, *, dev_scorer: DevScorer
) -> Path:
    return Trainer(cfg, dev_scorer=dev_scorer).train(resume=resume, overwrite=overwrite)
