"""TensorBoard event files of a training run, in ``RUN/tensorboard`` (``train.tensorboard``).

Both trainers write the same tags (``tensorboard --logdir runs`` shows every run):

* ``train/loss``, ``train/accuracy`` (token accuracy for seq2seq, image accuracy for
  vision), ``train/tokens_per_s`` or ``train/images_per_s``, ``train/lr`` and
  ``train/skipped_updates`` (non-finite updates so far): means over the last
  :data:`EVERY` updates, and over what is left of them before each evaluation;
* ``dev/<metric>`` at every evaluation, one per dev metric (counts such as
  ``items`` left out);
* ``attention/dev<i>`` at every evaluation: where the model looked on dev example
  ``i`` (the first :data:`EXAMPLES` of the dev split, the same ones every time),
  skipped at an evaluation where the pictures so far took more than
  :data:`PICTURE_SHARE` of the run's time (short epochs on a GPU: then fewer); never for a
  model without attention (``model.attention: none``: its weights are zeros, and saliency would
  cost a backward pass per output step; ``attnkit explain`` draws it after training).

Listeners (:meth:`Board.listen`) get the same scalars, with the event files or without them
(``RUN/metrics.jsonl``, :mod:`attnkit.training.run_log`).

The x axis is the update number. A resumed run appends to the same directory and
tells TensorBoard to drop what an earlier run logged after the resumed update.
Without the ``tensorboard`` package the run says so once and goes on without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EVERY = 20  # updates between training scalars: a few scalars, never a picture, per update
EXAMPLES = 3  # dev examples pictured at each evaluation
PICTURE_SHARE = 0.05  # most of the run's time that drawing pictures may take
COUNTS = ("items", "sentences", "words", "images")  # sizes of the dev set, not metrics

_said_missing = False  # the missing package is reported once per process


class Board:
    """One run's event files; every method does nothing when logging is off or unavailable.

    ``start(step)`` opens the writer once the run knows the update it goes on from.
    """

    def __init__(self, directory: Path, enabled: bool, log: Callable[[str], None], unit: str):
        self.directory = Path(directory)
        self._log = log
        self.enabled = enabled and _writer_class(log) is not None
        self.window = Window(unit)  # the trainer adds every finite update to it
        self._writer = None
        self._opened = time.perf_counter()
        self._picture_s = 0.0  # seconds spent making pictures
        self._listeners: list[Callable[[str, int, dict], None]] = []

    def start(self, step: int) -> None:
        """Open the writer for a run that goes on after update ``step`` (0: a fresh run)."""
        if self.enabled and self._writer is None:
            # events an earlier run logged after ``step`` (before it stopped) are dropped
            purge = step + 1 if step > 0 else None
            try:  # RUN/tensorboard a file, a dangling link, on a full or read-only disk
                self._writer = _writer_class()(log_dir=str(self.directory), purge_step=purge)
            except Exception as exc:  # noqa: BLE001 - logging must never cost the run
                self._give_up(exc)
            self._opened = time.perf_counter()

    def listen(self, listener: Callable[[str, int, dict], None]) -> None:
        """Call ``listener(prefix, step, {name: number})`` with every group of scalars logged
        (``train`` every :data:`EVERY` updates, ``dev`` at each evaluation), on or off."""
        self._listeners.append(listener)

    def scalars(self, step: int, values: dict, prefix: str) -> None:
        """``prefix/name`` for every number in ``values`` (counts in :data:`COUNTS` left out)."""
        numbers = {
            name: value
            for name, value in values.items()
            if isinstance(value, (int, float))
            and not isinstance(value, bool)
            and name not in COUNTS
        }
        for listener in self._listeners:
            listener(prefix, step, numbers)
        if self._writer is None:
            return
        try:
            for name, value in numbers.items():
                self._writer.add_scalar(f"{prefix}/{name}", value, step)
        except Exception as exc:  # noqa: BLE001 - logging must never cost a checkpoint
            self._give_up(exc)

    def train(self, step: int, lr: float, skipped_updates: int) -> None:
        """``train/*`` at update ``step``: the window's means (then a new window), LR, skips."""
        if self._writer is None and not self._listeners:
            self.window.restart()  # reading a GPU tensor would wait for the device: not for nothing
            return
        values = {**self.window.take(), "lr": lr, "skipped_updates": skipped_updates}
        self.scalars(step, values, "train")

    def pictures(self, step: int, figures: Iterable[tuple[str, Figure]]) -> None:
        """Each ``(tag, figure)`` as an RGB image (Agg, never pyplot), unless pictures are over
        their share of the time. ``figures`` is consumed lazily: making them is timed too."""
        if self._writer is None:
            return
        began = time.perf_counter()
        if self._picture_s > PICTURE_SHARE * (began - self._opened):
            return
        from attnkit.viz.visual import render  # matplotlib only once there are pictures

        try:
            for tag, fig in figures:
                pixels = np.asarray(render(fig))  # (H, W, 3) uint8
                fig.clear()
                self._writer.add_image(tag, pixels, step, dataformats="HWC")
        except Exception as exc:  # noqa: BLE001 - logging must never cost a checkpoint
            self._give_up(exc)
        self._picture_s += time.perf_counter() - began

    def _give_up(self, exc: Exception) -> None:
        """Say once why TensorBoard logging stopped, and go on training without it."""
        self._log(
            f"train.tensorboard: logging stopped ({type(exc).__name__}: {str(exc)[:200]}); "
            "training goes on without it"
        )
        writer, self._writer, self.enabled = self._writer, None, False
        try:
            if writer is not None:
                writer.close()
        except Exception:  # noqa: BLE001 - already failing; the run matters more
            pass

    @property
    def active(self) -> bool:
        return self._writer is not None

    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.close()  # its last events, flushed: a full disk refuses them
            except Exception as exc:  # noqa: BLE001 - logging must never cost the run
                self._log(f"train.tensorboard: the last events were not written ({exc})")

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Window:
    """Training statistics since the last log: mean loss, accuracy, items per second.

    ``add`` takes floats or tensors (summed on their device: no sync per update);
    ``take`` turns them into numbers and starts the next window.
    """

    def __init__(self, unit: str):
        self.unit = unit  # what an update's count counts: "tokens", "images", "nodes", ...
        self.restart()

    def restart(self) -> None:
        """Start timing afresh (after an evaluation, which is not training time)."""
        self.loss_sum, self.correct, self.count = 0.0, 0.0, 0
        self.started = time.perf_counter()

    def add(self, loss_sum, correct, count: int) -> None:
        """One finite update: its loss summed over ``count`` items, and how many were right."""
        self.loss_sum = self.loss_sum + loss_sum
        self.correct = self.correct + correct
        self.count += count

    @property
    def pending(self) -> bool:
        return self.count > 0

    def take(self) -> dict:
        """``{loss, accuracy, <unit>_per_s}`` of the window (empty if no update counted)."""
        seconds = time.perf_counter() - self.started
        out = {}
        if self.count:
            out = {
                "loss": float(self.loss_sum) / self.count,
                "accuracy": float(self.correct) / self.count,
                f"{self.unit}_per_s": self.count / max(seconds, 1e-9),
            }
        self.restart()
        return out


def forked_rng(device: torch.device):
    """Pictures draw no random numbers from the training stream (on or off, same run)."""
    cuda = [device.index or 0] if device.type == "cuda" else []
    return torch.random.fork_rng(devices=cuda)


def _writer_class(log: Callable[[str], None] | None = None):
    """torch's SummaryWriter, or None (said once, through ``log``) without tensorboard."""
    global _said_missing
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        if log is not None and not _said_missing:
            _said_missing = True
            log(
                f"train.tensorboard: no event files, the tensorboard package is missing ({exc}); "
                "pip install tensorboard, or set train.tensorboard: false"
            )
        return None
    return SummaryWriter
