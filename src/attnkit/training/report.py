"""What every run says while it trains, in one format for every family.

* :class:`DevScore`: what a family's ``evaluate`` returns (its dev figures, the one that decides
  ``best`` and patience, and where a family has its own rule, that rule's verdicts).
* :func:`evaluation_line`: the line after each dev evaluation (a numbers run's)::

      update 100 (epoch 1/2): dev exact_match 38 (best); train loss 1.4915, accuracy 51.6%;
      lr 1.0e-03; 4.9 s, 2,559 tokens/s

  where the run is, the deciding dev figure first (``(best)`` when it is the best so far), the
  family's other dev figures (the dev set's size left out), the training figures of the updates
  since the last evaluation, the rate, the seconds those updates took and the items a second
  (tokens, images, sentences, ...), and the updates skipped (not finite) among them, if any.
* :func:`final_line`: the run's last line (why it stopped, the best dev figure, where it is).

A figure whose name ends in ``_pct`` is shown as a percentage (``error_pct`` 1.5: ``error
1.50%``); other numbers with four significant digits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkit.training.state import TrainerState
from attnkit.training.tensorboard import COUNTS


@dataclass
class DevScore:
    """A dev evaluation, as a family's adapter returns it to the loop.

    ``metrics`` are every dev figure (TensorBoard ``dev/*``, ``metrics.jsonl``, the history);
    ``metric`` names the one that decides ``best`` and patience. A family whose stopping rule is
    not "the metric improved" (the GAT paper's: best when dev accuracy and dev loss are both at
    their best so far; patience reset when either is) says so in ``best`` and ``progress``;
    None leaves it to the metric.
    """

    metrics: dict[str, float]
    metric: str
    higher_is_better: bool
    best: bool | None = None  # the family's own verdict: the best checkpoint so far
    progress: bool | None = None  # ... and: not a bad evaluation for patience (None: = best)
    extra: dict[str, Any] = field(default_factory=dict)  # more of the history entry
    #: TensorBoard pictures of this evaluation, drawn only where TensorBoard is on
    pictures: Callable[[], Iterable[tuple[str, Any]]] | None = None

    @property
    def value(self) -> float:
        return self.metrics[self.metric]

    def count(self, state: TrainerState, epoch: int) -> bool:
        """Count this evaluation, made in (1-based) ``epoch``, into ``state`` (best, best_step,
        best_epoch, bad_evals); True when it is the best so far."""
        if self.best is None:
            improved = state.count_evaluation(self.value, self.higher_is_better)
        else:
            progress = self.best if self.progress is None else self.progress
            state.bad_evals = 0 if progress else state.bad_evals + 1
            if self.best:
                state.best, state.best_step = self.value, state.step
            improved = self.best
        if improved:
            state.best_epoch = epoch
        return improved


def figure(name: str, value: Any) -> str:
    """``name value`` as the log shows it: ``error 1.50%`` for ``error_pct``, else four
    significant digits (an int as it is)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} {value}"
    if name.endswith("_pct"):
        return f"{name.removesuffix('_pct')} {value:.2f}%"
    if isinstance(value, int):
        return f"{name} {value:,}"
    return f"{name} {value:.4g}"


def where(state: TrainerState, epoch: int) -> str:
    """``update 1200 (epoch 3/10)``: ``epoch`` is the 1-based epoch in progress or just done."""
    return f"update {state.step} (epoch {epoch}/{state.planned_epochs})"


def evaluation_line(
    state: TrainerState,
    epoch: int,
    score: DevScore,
    improved: bool,
    train: dict,
    lr: float,
    seconds: float,
    skipped: int,
    items: str,
) -> str:
    """The line of one dev evaluation (the module's docstring shows it). ``train``: the
    ``{"loss", "accuracy", "<items>_per_s"}`` of the updates since the last evaluation (empty
    where none was applied)."""
    dev = [figure(score.metric, score.value) + (" (best)" if improved else "")]
    dev += [figure(k, v) for k, v in score.metrics.items() if k != score.metric and k not in COUNTS]
    parts = [f"{where(state, epoch)}: dev {', '.join(dev)}"]
    if train:
        parts.append(f"train loss {train['loss']:.4f}, accuracy {100 * train['accuracy']:.1f}%")
    parts.append(f"lr {lr:.1e}")
    rate = train.get(f"{items}_per_s")
    parts.append(f"{seconds:.1f} s" + (f", {rate:,.0f} {items}/s" if rate else ""))
    if skipped:
        parts.append(f"{skipped} updates skipped (not finite)")
    return "; ".join(parts)


def final_line(state: TrainerState, metric: str | None, out: Path) -> str:
    """``done (patience): best dev bleu 23.46 at update 1200 (epoch 3); 2,000 updates in 4.1
    min; checkpoints in runs/x``."""
    if state.best is None or metric is None:
        best = "no dev evaluation"
    else:
        best = f"best dev {figure(metric, state.best)} at update {state.best_step}"
        if state.best_epoch:
            best += f" (epoch {state.best_epoch})"
    skipped = f" ({state.skipped_updates} skipped, not finite)" if state.skipped_updates else ""
    return (
        f"done ({state.stopped or 'epochs'}): {best}; {state.step:,} updates{skipped} in "
        f"{state.elapsed_s / 60:.1f} min; checkpoints in {out}"
    )
