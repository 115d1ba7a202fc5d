"""Training a seq2seq experiment: data -> vocabularies -> model -> updates -> checkpoints.

Adam with gradient clipping; learning-rate schedule ``plateau`` (cut on a
stalled dev metric), ``cosine`` (down to ``min_lr`` by the end of the epochs or
of the time budget), ``noam`` (warm-up then 1/sqrt decay) or ``constant``;
early stopping on the dev metric; a progress bar with loss, token accuracy and
target tokens/s, and the same in TensorBoard (``train.tensorboard``,
:mod:`attnkit.training.tensorboard`) with dev metrics and attention heatmaps.
``run_dir/best`` and ``run_dir/last`` are full checkpoints;
``resume=True`` continues from ``last`` exactly where it stopped, once every part
of its trainer state is checked against this run (:mod:`attnkit.training.resume`).
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
"""

from __future__ import annotations

import math
import random
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.batching import encode_pairs, make_batches
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.registry import build_splits, task_info
from attnkit.data.tokenizers import CharTokenizer, Tokenizer, WordTokenizer
from attnkit.data.vocab import Vocab
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.evaluation.evaluate import evaluate_translator
from attnkit.experiment import ExperimentConfig
from attnkit.models.seq2seq import Seq2Seq
from attnkit.training import distributed, resume, rundir
from attnkit.training import tensorboard as tb
from attnkit.training.averaging import CheckpointAverager
from attnkit.training.distributed import Distributed
from attnkit.training.guard import UpdateGuard, check_weights
from attnkit.training.loss import token_loss_backward
from attnkit.training.optim import adam
from attnkit.training.resume import restore_seq2seq
from attnkit.translator import Translation, Translator


def make_tokenizer(
    level: str, lowercase: bool, texts: list[str], directory: Path, name: str, vocab_size: int
) -> Tokenizer:
    if level == "char":
        return CharTokenizer(lowercase)
    if level == "word":
        return WordTokenizer(lowercase)
    from attnkit.data.subword import SentencePieceTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    return SentencePieceTokenizer.train(
        (t.lower() if lowercase else t for t in texts), directory, name, vocab_size
    )


@dataclass
class TrainerState:
    """Counters that a resumed run continues from (saved as trainer.json)."""

    epoch: int = 0  # current epoch (0-based)
    batches_done: int = 0  # batches of the current epoch already trained
    step: int = 0
    best: float | None = None
    best_step: int = 0
    bad_evals: int = 0
    elapsed_s: float = 0.0
    tokens: int = 0  # target tokens trained on (EOS included)
    train_s: float = 0.0  # seconds spent in updates: evaluation and checkpointing left out
    finished: bool = False
    skipped_updates: int = 0  # batches with a NaN/inf loss or gradient norm: no update applied
    history: list = field(default_factory=list)


class Trainer:
    def __init__(self, cfg: ExperimentConfig, splits: Splits | None = None, log_fn=None):
        self.cfg = cfg
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
        _, self.family, self.metric, self.higher_is_better = task_info(cfg.data.task)
        self.splits = splits or build_splits(cfg.data)
        for name in ("train", "dev"):
            if not getattr(self.splits, name):
                raise AttnkitError(f"the {name} split of task {cfg.data.task!r} is empty")

    # ---- setup -------------------------------------------------------------
    def _build(
        self, resume: bool
    ) -> tuple[Translator, TrainerState, torch.optim.Optimizer, object]:
        cfg, tc = self.cfg, self.cfg.train
        last = self.run_dir / "last"
        if resume:
            if not last.exists():
                raise CheckpointError(
                    f"{last}: nothing to resume from (train once without --resume)"
                )
            translator = Translator.load(last, self.device)
            saved = translator.config
            if saved.model != cfg.model or saved.data != cfg.data:
                raise CheckpointError(
                    f"{last}: its model/data config differs from this one; resume needs the same "
                    "experiment"
                )
        else:
            _seed_everything(tc.seed)
            if self._is_main:
                for stale in ("top", "averaged"):  # a fresh run must not average old weights
                    shutil.rmtree(self.run_dir / stale, ignore_errors=True)
            d = cfg.data
            with ExitStack() as scratch:
                tok_dir = self.run_dir / "tokenizers"
                if not self._is_main:  # only rank 0 writes into the run directory
                    tok_dir = Path(scratch.enter_context(tempfile.TemporaryDirectory()))
                sources, targets = zip(*self.splits.train)
                src_tok = make_tokenizer(
                    d.src_level, d.lowercase, list(sources), tok_dir, "source", d.vocab_size
                )
                tgt_tok = make_tokenizer(
                    d.tgt_level, d.lowercase, list(targets), tok_dir, "target", d.vocab_size
                )
            src_vocab = Vocab.build(src_tok.tokenize(s) for s, _ in self.splits.train)
            tgt_vocab = Vocab.build(tgt_tok.tokenize(t) for _, t in self.splits.train)
            model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab)).to(self.device)
            translator = Translator(model, cfg, src_tok, tgt_tok, src_vocab, tgt_vocab, self.device)
        translator.config = cfg  # train/decode settings of this run win over the saved ones
        optimizer = adam(translator.model.parameters(), tc.lr)
        scheduler = self._scheduler(optimizer)
        state = (
            restore_seq2seq(last, optimizer, scheduler, TrainerState, self.metric)
            if resume
            else TrainerState()
        )
        return translator, state, optimizer, scheduler

    def _scheduler(self, optimizer):
        tc = self.cfg.train
        if tc.scheduler == "plateau":
            return torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer,
                mode="max" if self.higher_is_better else "min",
                factor=tc.lr_factor,
                patience=tc.lr_patience,
                min_lr=tc.min_lr,
            )
        # cosine and noam: the rate is a function of the update number, set before every update
        return None

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
                if not self.dist.is_main:
                    self.log = _quiet
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
        """Hold the run directory (rank 0 alone under DDP; the others start once it holds it)."""
        with ExitStack() as stack:
            if self.dist is None:
                stack.enter_context(rundir.claim_run_dir(self.run_dir, resume, overwrite, self.log))
            else:
                self._on_main(
                    lambda: stack.enter_context(
                        rundir.claim_run_dir(self.run_dir, resume, overwrite, self.log)
                    )
                )
            yield

    def _on_main(self, fn, default=None):
        """``fn()`` in the main process; under DDP the others wait, and all stop if it fails."""
        return distributed.on_main(self.dist, fn, default)

    def _on_all(self, fn):
        """``fn()`` in every process; under DDP all stop if it fails in any."""
        return distributed.on_all(self.dist, fn)

    def _train(self, resume: bool) -> Path:
        tc, d = self.cfg.train, self.cfg.data
        translator, state, optimizer, scheduler = self._on_all(lambda: self._build(resume))
        self.board.start(state.step)
        self._on_main(lambda: rundir.check_space(self.run_dir, _checkpoint_bytes(translator.model)))
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
        self.log(self.backend.describe(self.cfg.model.rnn))
        examples = encode_pairs(
            self.splits.train,
            translator.src_tokenizer,
            translator.tgt_tokenizer,
            translator.src_vocab,
            translator.tgt_vocab,
            d.max_src_len,
            d.max_tgt_len,
            d.overlong,
            source_name=f"{d.task} train",
        )
        self.log(
            f"{d.task}: {len(self.splits.train)} train / {len(self.splits.dev)} dev / "
            f"{len(self.splits.test)} test pairs; vocab {len(translator.src_vocab)} -> "
            f"{len(translator.tgt_vocab)}; {sum(p.numel() for p in model.parameters()):,} "
            f"parameters; device {self.device}"
        )
        self.train_model = model
        if self.dist is not None:
            self._start_ddp(translator, state, examples)
        start = time.time() - state.elapsed_s
        budget_s = tc.max_minutes * 60 if tc.max_minutes else None
        interrupted = self._loop(translator, state, optimizer, scheduler, examples, start, budget_s)
        if interrupted:
            self._save_interrupted(translator, state, optimizer, scheduler, start)
        state.finished = True
        state.elapsed_s = time.time() - start
        self._on_main(lambda: self._finish(translator, state, optimizer, scheduler))
        return self.run_dir / "best"

    def _start_ddp(self, translator: Translator, state: TrainerState, examples) -> None:
        """Check that every rank holds the same data, give each its own dropout, wrap the model."""
        dist, tc = self.dist, self.cfg.train
        fingerprint = distributed.digest(
            translator.src_vocab.to_json(),
            translator.tgt_vocab.to_json(),
            [(e.src, e.tgt) for e in examples],
        )
        dist.check_same(fingerprint, "vocabularies or training examples")
        if not dist.is_main:  # rank 0 keeps the seeded (or resumed) generator of a 1-process run
            torch.manual_seed(tc.seed * 1000003 + dist.rank * 7919 + state.step)
        self.train_model = dist.wrap(translator.model)
        backend = "nccl" if dist.device.type == "cuda" else "gloo"
        self.log(
            f"DistributedDataParallel: {dist.world} processes ({backend}), "
            f"{torch.get_num_threads()} thread(s) each; rank 0 evaluates and saves"
        )

    def _finish(self, translator: Translator, state: TrainerState, optimizer, scheduler) -> None:
        """The final ``last`` (and ``best`` and ``averaged``) of a run that ran to its end."""
        tc = self.cfg.train
        self._save(translator, self.run_dir / "last", state, optimizer, scheduler)
        if not (self.run_dir / "best").exists():
            self._save(translator, self.run_dir / "best", state, optimizer, scheduler)
        if tc.average_checkpoints >= 2:
            self._averager().average(translator, state.history, lambda: self._score_dev(translator))
        skipped = f" ({state.skipped_updates} skipped, not finite)" if state.skipped_updates else ""
        self.log(
            f"done: best dev {self.metric} {state.best} at update {state.best_step}; "
            f"{state.step} updates{skipped} in {state.elapsed_s / 60:.1f} min; "
            f"checkpoints in {self.run_dir}"
        )

    def _averager(self) -> CheckpointAverager:
        n = self.cfg.train.average_checkpoints
        return CheckpointAverager(self.run_dir, n, self.metric, self.higher_is_better, self.log)

    def _score_dev(self, translator: Translator) -> dict:
        """Greedy dev metrics of the weights ``translator`` holds."""
        return evaluate_translator(translator, self.family, self.splits.dev, beam_size=1)[0]

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
            bar = tqdm(
                total=len(batches),
                initial=state.batches_done,
                unit="batch",
                desc=f"epoch {state.epoch + 1}/{tc.epochs}",
                leave=False,
                disable=not (tc.progress and self._is_main),
                dynamic_ncols=True,
            )
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
                self._set_lr(optimizer, state.step, planned_updates, elapsed, budget_s)
                t_update = time.time()
                loss, correct, n_tokens = self._update(optimizer, batch, guard, state.step + 1)
                state.train_s += time.time() - t_update
                self._count_update(state, optimizer, guard, loss, correct, n_tokens)
                tokens_seen += n_tokens
                bar.update(1)
                bar.set_postfix(
                    loss=f"{loss:.3f}",
                    acc=f"{100 * correct / n_tokens:.1f}%",
                    tok_s=f"{tokens_seen / max(1e-9, time.time() - t_epoch):.0f}",
                    lr=f"{optimizer.param_groups[0]['lr']:.1e}",
                )
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

    def _set_lr(
        self, optimizer, step: int, planned_updates: int, elapsed: float, budget_s: float | None
    ) -> None:
        """cosine and noam: the rate of update ``step``, derived from the saved step (a resumed
        run goes on exactly); plateau and constant leave it to the scheduler."""
        tc = self.cfg.train
        if tc.scheduler not in ("cosine", "noam"):
            return
        if tc.scheduler == "cosine":
            lr = cosine_lr(tc, step, planned_updates, elapsed, budget_s)
        else:
            lr = noam_lr(tc, step)
        for group in optimizer.param_groups:
            group["lr"] = lr

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
            self._log_train(state, optimizer)

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
            loss_sum, correct, tokens = self.dist.sum(
                [loss_sum, correct, tokens] if scale else [0, 0, 0]
            )
            correct, tokens = int(correct), int(tokens)
        guard.step(optimizer, self.train_model.parameters(), loss_sum / tokens, tc.clip, update)
        return loss_sum / tokens, correct, tokens

    def _evaluate(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> bool:
        """Score dev, save checkpoints, step the schedule (in rank 0); True means stop early."""
        if self.board.window.pending:  # the updates since the last log, before the clock stops
            self._log_train(state, optimizer)
        try:
            stop = self._on_main(
                lambda: self._score_and_save(translator, state, optimizer, scheduler, start),
                default=False,
            )
        finally:
            self.board.window.restart()  # evaluating and saving are not training time
        if (
            self.dist is not None
        ):  # the plateau schedule's rate and early stopping, as rank 0 decided
            flag, lr = self.dist.from_main([float(stop), optimizer.param_groups[0]["lr"]])
            for group in optimizer.param_groups:
                group["lr"] = lr
            stop = bool(flag)
        return stop

    def _log_train(self, state: TrainerState, optimizer) -> None:
        self.board.train(state.step, optimizer.param_groups[0]["lr"], state.skipped_updates)

    def _log_dev(
        self, step: int, metrics: dict, translations: list[Translation], refs: list[list[str]]
    ) -> None:
        """Dev metrics, and heatmaps (T, S) of the first dev examples, to TensorBoard."""
        self.board.scalars(step, metrics, "dev")
        self.board.pictures(step, _heatmaps(translations[: tb.EXAMPLES], refs))

    def _score_and_save(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> bool:
        tc = self.cfg.train
        metrics, _, refs, translations = evaluate_translator(
            translator, self.family, self.splits.dev, beam_size=1
        )
        self._log_dev(state.step, metrics, translations, refs)
        value = metrics[self.metric]
        improved = state.best is None or (
            value > state.best if self.higher_is_better else value < state.best
        )
        if improved:
            state.best, state.best_step, state.bad_evals = value, state.step, 0
        else:
            state.bad_evals += 1
        if scheduler is not None and tc.scheduler == "plateau":
            scheduler.step(value)
        state.elapsed_s = time.time() - start
        state.history.append(
            {
                "step": state.step,
                "epoch": state.epoch + 1,
                "dev": metrics,
                "lr": optimizer.param_groups[0]["lr"],
                "elapsed_s": round(state.elapsed_s, 1),
                "tokens": state.tokens,
                "train_s": round(state.train_s, 1),
                "skipped_updates": state.skipped_updates,
            }
        )
        self.log(
            f"update {state.step} (epoch {state.epoch + 1}): dev {self.metric} {value}"
            f"{' (best)' if improved else ''}; lr {optimizer.param_groups[0]['lr']:.1e}; "
            f"{state.elapsed_s / 60:.1f} min; {state.tokens / max(state.train_s, 1e-9):,.0f} train "
            "tokens/s"
        )
        if improved:
            self._save(translator, self.run_dir / "best", state, optimizer, scheduler)
        self._save(translator, self.run_dir / "last", state, optimizer, scheduler)
        if tc.average_checkpoints >= 2:
            self._averager().keep(translator, state.step, state.history)
        if tc.patience is not None and state.bad_evals >= tc.patience:
            self.log(f"early stopping: no dev improvement in {tc.patience} evaluations")
            return True
        return False

    def _save(
        self, translator: Translator, directory: Path, state: TrainerState, optimizer, scheduler
    ) -> None:
        check_weights(translator.model, f"update {state.step}: {directory} not written")
        info, tensors = resume.optimizer_to_tensors(optimizer)
        tensors["rng.torch"] = torch.get_rng_state()
        trainer_state = {
            "state": state.__dict__,
            "optimizer": info,
            "scheduler": scheduler.state_dict()
            if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
            else None,
            "metric": self.metric,
            "backend": self.backend.record(),
        }
        translator.save(directory, trainer_state, tensors)

    def _save_interrupted(
        self, translator: Translator, state: TrainerState, optimizer, scheduler, start: float
    ) -> None:
        """Save ``last`` where a signal stopped the loop and raise TrainingInterrupted."""
        state.elapsed_s = time.time() - start
        self._on_main(
            lambda: self._save(translator, self.run_dir / "last", state, optimizer, scheduler)
        )
        where = f"update {state.step} (epoch {state.epoch + 1})"
        raise self.signals.interrupted(self.run_dir / "last", where)


def cosine_lr(
    tc, step: int, planned_updates: int, elapsed_s: float, budget_s: float | None
) -> float:
    """The learning rate of update ``step`` under ``scheduler: cosine``.

    Half a cosine from ``lr`` down to ``min_lr`` over the run, whose progress
    is the larger of updates done / planned (``epochs`` x batches per epoch)
    and time used / ``max_minutes``: a time budget gets the low learning rates
    of the schedule's end, instead of being cut off at a high one. A linear
    warm-up over ``warmup_steps`` updates comes first.
    """
    progress = step / max(1, planned_updates)
    if budget_s:
        progress = max(progress, elapsed_s / budget_s)
    lr = tc.min_lr + (tc.lr - tc.min_lr) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    if tc.warmup_steps and step < tc.warmup_steps:
        lr *= (step + 1) / tc.warmup_steps
    return lr


def noam_lr(tc, step: int) -> float:
    """The learning rate of update ``step`` (0-based) under ``scheduler: noam``: ``lr`` x
    min((step + 1) / warm-up, sqrt(warm-up / (step + 1))), a linear rise to ``lr`` over
    ``warmup_steps`` updates, then 1/sqrt decay."""
    warm = max(1, tc.warmup_steps)
    return tc.lr * min((step + 1) / warm, math.sqrt(warm / (step + 1)))


def _heatmaps(translations: list[Translation], refs: list[list[str]]):
    """(tag, heatmap figure) of each translation's attention (T, S), titled with its result."""
    # matplotlib (~30 MB resident) is imported only where heatmaps are drawn
    from attnkit.viz.heatmap import plot_heatmap

    for i, (out, options) in enumerate(zip(translations, refs)):
        mark = "right" if out.output in options else f"expected {options[0]}"
        title = f"{out.source} -> {out.output} ({mark})"
        yield f"attention/dev{i}", plot_heatmap(out.record(), title=title[:80].replace("$", r"\$"))


def _checkpoint_bytes(model: torch.nn.Module) -> int:
    """About the size of one checkpoint: the weights and Adam's two moments."""
    return 3 * sum(t.numel() * t.element_size() for t in model.state_dict().values())


def _log(message: str) -> None:
    """Print above any progress bar, at once (also when stdout is a file)."""
    tqdm.write(message)
    sys.stdout.flush()


def _quiet(message: str) -> None:
    """The log of DDP ranks other than 0: rank 0 speaks for the run."""


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_experiment(cfg: ExperimentConfig, resume: bool = False, overwrite: bool = False) -> Path:
    return Trainer(cfg).train(resume=resume, overwrite=overwrite)
