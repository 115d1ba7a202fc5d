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
``Translator.load``.

The trainer is given its dev scorer (``dev_scorer``, the commands pass
:func:`attnkit.evaluation.evaluate.evaluate_translator`): training imports nothing of evaluation.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from pathlib import Path

import torch
from tqdm import tqdm

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.batching import make_batches
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.registry import build_splits, task_metric
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError
from attnkit.experiment import ExperimentConfig
from attnkit.training import distributed, rundir, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.distributed import Distributed
from attnkit.training.guard import UpdateGuard
from attnkit.training.loss import token_loss_backward
from attnkit.training.run_log import RunLog, bar_disabled
from attnkit.training.seq2seq_checkpoints import RunCheckpoints
from attnkit.training.seq2seq_setup import checkpoint_bytes, starting_point, training_examples
from attnkit.training.state import TrainerState
from attnkit.translator import Translation, Translator

#: greedy dev scoring: ``(translator, metric family, dev pairs, beam_size=1)`` -> (metrics,
#: sources, references per source, translations)
DevScorer = Callable[..., tuple[dict, list[str], list[list[str]], list[Translation]]]


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
        translator, state, optimizer, scheduler = distributed.on_all(
            self.dist,
            lambda: starting_point(
                self.cfg, self.splits, self.device, resume, self.log, self._is_main
            ),
        )
        self.board.start(state.step)
        self._on_main(lambda: rundir.check_space(self.run_dir, checkpoint_bytes(translator.model)))
        if state.epoch >= tc.epochs:
            self.log(
                f"{self.run_dir}: all {tc.epochs} epochs are done; raise train.epochs to train on"
            )
            return self.run_dir / "best"
        state.finished = False
        model = translator.model
        # resolved before DDP wraps the model: every rank runs the same computation
        self.backend = resolve_backend(tc.backend, self.device, next(model.parameters()).dtype)
        model.set_backend(self.backend)
        self.checkpoints.backend_record = self.backend.record()
        self.log(model.describe_backend(self.backend))
        examples = training_examples(translator, self.splits, self.cfg)
        self.log(
            f"{d.task}: {len(self.splits.train)} train / {len(self.splits.dev)} dev / "
            f"{len(self.splits.test)} test pairs; vocab {len(translator.src_vocab)} -> "
            f"{len(translator.tgt_vocab)}; {sum(p.numel() for p in model.parameters()):,} "
            f"parameters; device {self.device}"
        )
        self.train_model = model
        if self.dist is not None:
            seed = self.cfg.train.seed * 1000003 + self.dist.rank * 7919 + state.step
            self.train_model = distributed.start_data_parallel(
                self.dist, translator, examples, seed, self.log
            )
        start = time.time() - state.elapsed_s
        self.log.start(state, start, self.board)  # RUN/metrics.jsonl from here
        budget_s = tc.max_minutes * 60 if tc.max_minutes else None
        interrupted = self._loop(translator, state, optimizer, scheduler, examples, start, budget_s)
        if interrupted:
            self._save_interrupted(translator, state, optimizer, scheduler, start)
        state.finished = True
        state.elapsed_s = time.time() - start
        score_dev = lambda: self._score_dev(translator)[0]  # noqa: E731
        self._on_main(
            lambda: self.checkpoints.finish(translator, state, optimizer, scheduler, score_dev)
        )
        return self.run_dir / "best"

    def _score_dev(self, translator: Translator):
        """Greedy dev (metrics, sources, references, translations) of the weights it holds."""
        return self.dev_scorer(translator, self.family, self.splits.dev, beam_size=1)

    def _loop(
        self,
        translator: Translator,
        state: TrainerState,
        optimizer,
        scheduler,
        examples,
        start: float,
        budget_s: float | None,
    ) -> bool:
        """Epochs of updates with evaluations in between, until epochs, patience or time run out.

        True when SIGINT/SIGTERM stopped it (seen before an update, so an epoch's last update is
        still followed by its evaluation and a resumed run goes on exactly)."""
        tc = self.cfg.train
        model = translator.model
        guard = UpdateGuard(tc.max_bad_updates)
        stop = False
        self.board.window.restart()
        while state.epoch < tc.epochs and not stop:
            if self._sync(start)[0]:
                return True
            batches = make_batches(
                examples,
                batch_size=None if tc.max_tokens else tc.batch_size,
                max_tokens=tc.max_tokens,
                shuffle=True,
                seed=tc.seed * 100003 + state.epoch,
            )
            bar = _progress_bar(tc, state, len(batches), tc.progress and self._is_main)
            planned_updates = tc.epochs * len(batches)  # for the cosine schedule
            tokens_seen, t_epoch = 0, time.time()
            # resumed from this epoch's final checkpoint: its evaluation is done
            evaluated_already = state.batches_done >= len(batches)
            for batch in batches[state.batches_done :]:
                stop_now, elapsed = self._sync(start)
                if stop_now:
                    bar.close()
                    return True
                model.train()
                _set_lr(tc, optimizer, state.step, planned_updates, elapsed, budget_s)
                t_update = time.time()
                loss, correct, n_tokens = self._update(optimizer, batch, guard, state.step + 1)
                state.train_s += time.time() - t_update
                self._count_update(state, optimizer, guard, loss, correct, n_tokens)
                tokens_seen += n_tokens
                tok_s = tokens_seen / max(1e-9, time.time() - t_epoch)
                _show_update(bar, loss, correct / n_tokens, tok_s, optimizer.param_groups[0]["lr"])
                out_of_time = budget_s is not None and self._sync(start)[1] > budget_s
                if (tc.eval_every and state.step % tc.eval_every == 0) or out_of_time:
                    stop = self._evaluate(translator, state, optimizer, scheduler, start)
                    stop = stop or out_of_time
                    if stop:
                        break
            bar.close()
            if stop:
                break
            if not tc.eval_every and not evaluated_already:  # once an epoch
                stop = self._evaluate(translator, state, optimizer, scheduler, start)
            state.epoch += 1
            state.batches_done = 0
        return False

    def _count_update(
        self,
        state: TrainerState,
        optimizer,
        guard: UpdateGuard,
        loss: float,
        correct: int,
        n_tokens: int,
    ) -> None:
        """The counters of one update, applied or skipped, and its share of the training log."""
        if guard.last_reason is not None:  # skipped: the weights are as they were
            state.skipped_updates += 1
            self.log(
                f"update {state.step + 1}: skipped, not finite ({guard.last_reason}); "
                f"{guard.in_a_row} in a row, {state.skipped_updates} in all"
            )
        else:
            self.board.window.add(loss * n_tokens, correct, n_tokens)
        state.tokens += n_tokens
        state.step += 1
        state.batches_done += 1
        if state.step % tb.EVERY == 0:
            self.board.train(state.step, optimizer.param_groups[0]["lr"], state.skipped_updates)

    def _sync(self, start: float) -> tuple[bool, float]:
        """(stop for a signal?, seconds since ``start``); under DDP the same on every rank."""
        elapsed = time.time() - start
        if self.dist is None:
            return self.signals.requested, elapsed
        signum, elapsed = self.dist.agree(self.signals.signum, elapsed)
        if signum is not None and self.signals.signum is None:
            self.signals.signum = signum  # another rank's signal: this one stops with it
        return signum is not None, elapsed

    def _update(self, optimizer, batch, guard: UpdateGuard, update: int) -> tuple[float, int, int]:
        """One optimizer step on the batch's mean token loss: (loss, correct, target tokens).

        Under DDP ``batch`` is the global batch, of which this rank trains its shard; the
        figures returned are the global batch's. The step is skipped (``guard``) when the
        loss or the gradient norm is not finite.
        """
        tc = self.cfg.train
        optimizer.zero_grad(set_to_none=True)
        part, scale = (batch, 1.0) if self.dist is None else self.dist.shard(batch)
        loss_sum, correct, tokens = token_loss_backward(
            self.train_model,
            part.to(self.device),
            batch.num_target_tokens,
            tc.label_smoothing,
            scale,
        )
        if self.dist is not None:  # the global batch's loss: every rank's guard decides alike
            figures = [loss_sum, correct, tokens] if scale else [0, 0, 0]
            loss_sum, correct, tokens = self.dist.sum(figures)
            correct, tokens = int(correct), int(tokens)
        guard.step(optimizer, self.train_model.parameters(), loss_sum / tokens, tc.clip, update)
        return loss_sum / tokens, correct, tokens

    def _evaluate(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> bool:
        """Score dev, save checkpoints, step the schedule (in rank 0); True means stop early."""
        if self.board.window.pending:  # the updates since the last log, before the clock stops
            self.board.train(state.step, optimizer.param_groups[0]["lr"], state.skipped_updates)
        try:
            stop = self._on_main(
                lambda: self._score_and_save(translator, state, optimizer, scheduler, start),
                default=False,
            )
        finally:
            self.board.window.restart()  # evaluating and saving are not training time
        if self.dist is not None:  # the plateau schedule's rate and early stopping: rank 0's
            flag, lr = self.dist.from_main([float(stop), optimizer.param_groups[0]["lr"]])
            schedules.set_rate(optimizer, lr)
            stop = bool(flag)
        return stop

    def _score_and_save(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> bool:
        metrics, _, refs, translations = self._score_dev(translator)
        # dev metrics, and heatmaps (T, S) of the first dev examples, to TensorBoard (a model
        # without attention has none to draw)
        self.board.scalars(state.step, metrics, "dev")
        if translator.model.has_attention:
            self.board.pictures(state.step, _heatmaps(translations[: tb.EXAMPLES], refs))
        return self.checkpoints.after_evaluation(
            translator, metrics, state, optimizer, scheduler, start
        )

    def _save_interrupted(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> None:
        """Save ``last`` where a signal stopped the loop and raise TrainingInterrupted."""
        state.elapsed_s = time.time() - start
        self._on_main(
            lambda: self.checkpoints.save(translator, "last", state, optimizer, scheduler)
        )
        where = f"update {state.step} (epoch {state.epoch + 1})"
        raise self.signals.interrupted(self.run_dir / "last", where)


def _set_lr(
    tc, optimizer, step: int, planned_updates: int, elapsed: float, budget_s: float | None
) -> None:
    """The rate of update ``step``, from the saved step (a resumed run goes on exactly);
    plateau leaves it to its scheduler."""
    if tc.scheduler in schedules.PER_UPDATE:
        progress = schedules.run_progress(step, planned_updates, elapsed, budget_s)
        schedules.set_rate(optimizer, schedules.learning_rate(tc, step, progress))


def _progress_bar(tc, state: TrainerState, n_batches: int, show: bool) -> tqdm:
    """The progress bar of an epoch of ``n_batches``, from the batches already done."""
    return tqdm(
        total=n_batches,
        initial=state.batches_done,
        unit="batch",
        desc=f"epoch {state.epoch + 1}/{tc.epochs}",
        leave=False,
        disable=bar_disabled(show),  # only on a terminal
        dynamic_ncols=True,
    )


def _show_update(bar: tqdm, loss: float, accuracy: float, tok_s: float, lr: float) -> None:
    """One update on the progress bar: its loss, token accuracy, the epoch's tokens/s, the rate."""
    bar.update(1)
    bar.set_postfix(
        loss=f"{loss:.3f}", acc=f"{100 * accuracy:.1f}%", tok_s=f"{tok_s:.0f}", lr=f"{lr:.1e}"
    )


def _heatmaps(translations: list[Translation], refs: list[list[str]]):
    """(tag, heatmap figure) of each translation's attention (T, S), titled with its result."""
    # matplotlib (~30 MB resident) is imported only where heatmaps are drawn
    from attnkit.viz.heatmap import plot_heatmap

    for i, (out, options) in enumerate(zip(translations, refs)):
        mark = "right" if out.output in options else f"expected {options[0]}"
        title = f"{out.source} -> {out.output} ({mark})"
        yield f"attention/dev{i}", plot_heatmap(out.record(), title=title[:80].replace("$", r"\$"))


def _log(message: str) -> None:
    """Print above any progress bar, at once (also when stdout is a file)."""
    tqdm.write(message)
    sys.stdout.flush()


def train_experiment(
    cfg: ExperimentConfig, resume: bool = False, overwrite: bool = False, *, dev_scorer: DevScorer
) -> Path:
    return Trainer(cfg, dev_scorer=dev_scorer).train(resume=resume, overwrite=overwrite)
