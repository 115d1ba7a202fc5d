"""The seq2seq family's part of the training loop (:mod:`attnkit.training.loop`).

Batches of sentence pairs reshuffled every epoch (by ``train.batch_size`` or ``max_tokens``);
the rate of every update from its step (``noam``, ``cosine``, ``constant``; the ``plateau``
schedule steps on dev scores instead); one update is the mean token loss of a batch, of which
each rank trains its shard under DistributedDataParallel (the figures returned are the whole
batch's, so every rank's guard decides alike); its forward runs in ``train.precision``
(:mod:`attnkit.training.precision`). Each evaluation greedily decodes dev with the scorer
the adapter is given (``dev_scorer``), steps the plateau schedule and draws the first examples'
attention for TensorBoard; :class:`attnkit.families.seq2seq.checkpoints.RunCheckpoints` writes
the checkpoints and keeps the best for averaging.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnkit.data.batching import make_batches
from attnkit.families.seq2seq.bundle import Seq2SeqBundle
from attnkit.families.seq2seq.checkpoints import RunCheckpoints
from attnkit.families.seq2seq.config import ExperimentConfig
from attnkit.families.seq2seq.translator import Translation
from attnkit.training import precision, schedules
from attnkit.training import tensorboard as tb
from attnkit.training.distributed import Distributed
from attnkit.training.loop import Update
from attnkit.training.loss import token_loss_backward
from attnkit.training.report import DevScore
from attnkit.training.state import TrainerState

#: greedy dev scoring: ``(bundle, metric family, dev pairs, beam_size=1)`` -> (metrics,
#: sources, references per source, translations)
DevScorer = Callable[..., tuple[dict, list[str], list[list[str]], list[Translation]]]


class Seq2SeqAdapter:
    """A seq2seq model's batches, updates, dev evaluations and checkpoints, for the loop.

    ``train_model`` is the model that trains (``bundle.model``, or its DDP wrapper);
    ``score_dev()`` returns greedy dev (metrics, sources, references, translations) of the
    weights ``bundle`` holds.
    """

    items = "tokens"

    def __init__(
        self,
        cfg: ExperimentConfig,
        bundle: Seq2SeqBundle,
        train_model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler,
        examples: list,
        checkpoints: RunCheckpoints,
        score_dev: Callable[[], tuple],
        device: torch.device,
        dist: Distributed | None,
        scaler: torch.amp.GradScaler | None = None,
    ):
        self.cfg, self.tc, self.bundle = cfg, cfg.train, bundle
        self.train_model, self.optimizer, self.scheduler = train_model, optimizer, scheduler
        self.examples, self.checkpoints, self.score_dev = examples, checkpoints, score_dev
        self.device, self.dist = device, dist
        self.scaler = scaler  # fp16's loss scaler, which the loop's guard steps through
        self.budget_s = self.tc.max_minutes * 60 if self.tc.max_minutes else None

    def parameters(self):
        return self.train_model.parameters()

    # ---- an epoch ------------------------------------------------------------------------------
    def epoch_batches(self, state: TrainerState) -> list:
        tc = self.tc
        return make_batches(
            self.examples,
            batch_size=None if tc.max_tokens else tc.batch_size,
            max_tokens=tc.max_tokens,
            shuffle=True,
            seed=tc.seed * 100003 + state.epoch,
        )

    def rate(self, state: TrainerState, index: int, n_batches: int, elapsed: float) -> float | None:
        """The rate of update ``state.step + 1``, from the saved step (a resumed run goes on
        exactly); plateau leaves it to its scheduler."""
        if self.tc.scheduler not in schedules.PER_UPDATE:
            return None
        planned_updates = self.tc.epochs * n_batches  # for the cosine schedule
        progress = schedules.run_progress(state.step, planned_updates, elapsed, self.budget_s)
        return schedules.learning_rate(self.tc, state.step, progress)

    def step(self, batch, update: int) -> Update:
        """Gradients of the batch's mean token loss. Under DDP ``batch`` is the global batch, of
        which this rank trains its shard; the figures are the global batch's."""
        self.train_model.train()
        self.optimizer.zero_grad(set_to_none=True)
        part, scale = (batch, 1.0) if self.dist is None else self.dist.shard(batch)
        loss_sum, correct, tokens = token_loss_backward(
            self.train_model,
            part.to(self.device),
            batch.num_target_tokens,
            self.tc.label_smoothing,
            scale,
            precision.autocast(self.tc.precision, self.device),
            self.scaler,
        )
        if self.dist is not None:  # the global batch's loss: every rank's guard decides alike
            figures = [loss_sum, correct, tokens] if scale else [0, 0, 0]
            loss_sum, correct, tokens = self.dist.sum(figures)
            correct, tokens = int(correct), int(tokens)
        return Update(loss_sum / tokens, loss_sum / tokens, correct, tokens)

    # ---- evaluations and checkpoints -----------------------------------------------------------
    def evaluate(self, state: TrainerState) -> DevScore:
        """Greedy dev scores of the weights as they are (the plateau schedule steps on them),
        with heatmaps (T, S) of the first dev examples for TensorBoard (a model without
        attention has none to draw)."""
        metrics, _, refs, translations = self.score_dev()
        checkpoints = self.checkpoints
        if self.scheduler is not None:  # plateau
            self.scheduler.step(metrics[checkpoints.metric])
        pictures = None
        if self.bundle.model.has_attention:
            pictures = lambda: _heatmaps(translations[: tb.EXAMPLES], refs)  # noqa: E731
        higher = checkpoints.higher_is_better
        return DevScore(metrics, checkpoints.metric, higher, pictures=pictures)

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        """``RUN/name``: ``last`` (resumable) also holds the optimizer, schedule and RNG."""
        self.checkpoints.save(self.bundle, name, state, self.optimizer, self.scheduler)

    def saved(self, state: TrainerState, reason: str) -> None:
        self.checkpoints.kept(self.bundle, state)


def _heatmaps(translations: list[Translation], refs: list[list[str]]):
    """(tag, heatmap figure) of each translation's attention (T, S), titled with its result."""
    # matplotlib (~30 MB resident) is imported only where heatmaps are drawn
    from attnkit.viz.heatmap import plot_heatmap

    for i, (out, options) in enumerate(zip(translations, refs)):
        mark = "right" if out.output in options else f"expected {options[0]}"
        title = f"{out.source} -> {out.output} ({mark})"
        yield f"attention/dev{i}", plot_heatmap(out.record(), title=title[:80].replace("$", r"\$"))
