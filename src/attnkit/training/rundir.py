"""A trainer's hold on its run directory, and stopping cleanly on a signal.

:func:`claim_run_dir` is what every trainer enters before it trains:

* the directory is created and must take a file (a read-only directory fails
  here, in one line, not at the first save after the training time is spent);
* a lock (``fcntl.flock`` on ``RUN/.lock``) keeps a second trainer out at once;
* what a crash in the middle of a save left behind is repaired
  (:func:`attnkit.checkpoint.recover_interrupted`);
* a fresh run (no resume) refuses a directory that holds checkpoints unless
  told to overwrite them, and then removes them first, with the TensorBoard
  log of the earlier run (a resumed run appends to it).

:class:`StopSignals` turns SIGINT (Ctrl-C) and SIGTERM (what schedulers send)
into a request that the trainer sees after the current update: it saves
``last`` and raises :class:`attnkit.errors.TrainingInterrupted`, which the CLI
prints as one line before exiting with 128 + the signal's number (130, 143).
A second signal stops at once.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from attnkit import checkpoint as ckpt
from attnkit.errors import CheckpointError, TrainingInterrupted

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, runs are not guarded
    fcntl = None

LOCK_NAME = ".lock"
CHECKPOINT_NAMES = ("last", "best", "averaged")  # directly in the run directory
TOP_NAMES = r"step-\d+"  # in RUN/top (checkpoint averaging)
LOG_NAME = "tensorboard"  # RUN/tensorboard: event files (attnkit.training.tensorboard)


@contextmanager
def claim_run_dir(
    run_dir: str | Path, resume: bool, overwrite: bool, log: Callable[[str], None] = print
) -> Iterator[Path]:
    """Hold ``run_dir`` for one training run (see the module docstring); yields it."""
    run_dir = Path(run_dir)
    check_writable(run_dir)
    with _locked(run_dir):
        for parent, names in ((run_dir, "|".join(CHECKPOINT_NAMES)), (run_dir / "top", TOP_NAMES)):
            for message in ckpt.recover_interrupted(parent, names):
                log(message)
        if not resume:
            _clear_earlier_run(run_dir, overwrite)
            # a fresh run's curves start empty, not on top of an earlier run's
            shutil.rmtree(run_dir / LOG_NAME, ignore_errors=True)
        yield run_dir


def recover_before_resume(run_dir: str | Path, log: Callable[[str], None] = print) -> None:
    """Repair a save a crash interrupted (:func:`attnkit.checkpoint.recover_interrupted`) before
    ``--resume`` reads ``RUN/last``, on both save paths: a ``last`` left aside (``.last.old-*``)
    or written but not yet in place (``.last.tmp-*``) is put back, so the first ``--resume``
    after the crash goes on. Nothing is done while ``last`` is in place; another trainer holding
    the run (a second DDP rank repairing it) is waited for a few seconds."""
    run_dir = Path(run_dir)
    for _ in range(50):
        if not run_dir.is_dir() or os.path.lexists(run_dir / "last"):
            return
        try:
            with _locked(run_dir):
                for parent, names in (
                    (run_dir, "|".join(CHECKPOINT_NAMES)),
                    (run_dir / "top", TOP_NAMES),
                ):
                    for message in ckpt.recover_interrupted(parent, names):
                        log(message)
            return
        except CheckpointError:
            time.sleep(0.1)  # held by another process: it may be repairing the same run


def check_writable(directory: Path) -> None:
    """Create ``directory`` and a file in it, then remove the file; CheckpointError if it fails."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-test-", dir=directory)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise CheckpointError(
            f"{directory}: cannot write checkpoints there "
            f"({exc.strerror or exc}); choose another output directory"
        ) from None


def check_space(directory: Path, checkpoint_bytes: int) -> None:
    """Refuse to start when ``directory``'s disk cannot take the checkpoints of this run.

    Peak use is ``best`` + ``last`` + one being written, each ``checkpoint_bytes``.
    """
    need = 3 * checkpoint_bytes
    free = shutil.disk_usage(directory).free
    if free < need:
        raise CheckpointError(
            f"{directory}: {free / 2**20:.1f} MiB free, the checkpoints of this "
            f"run need about {need / 2**20:.1f} MiB; free some space or choose "
            "another output directory"
        )


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``run_dir`` while the block runs; refuse at once if it is held."""
    if fcntl is None:
        yield
        return
    with open(run_dir / LOCK_NAME, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise CheckpointError(
                    f"{run_dir / LOCK_NAME}: cannot lock the run directory ({exc.strerror or exc})"
                ) from None
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise CheckpointError(
                f"{run_dir}: another training run (pid {holder}) is using this "
                "directory; wait for it to end or choose another output "
                "directory"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")  # named in the refusal of a second trainer
        handle.flush()
        yield  # closing the file releases the lock (also when the process dies)


def _clear_earlier_run(run_dir: Path, overwrite: bool) -> None:
    """Refuse a run directory holding checkpoints, or with ``overwrite`` remove them."""
    found = [name for name in CHECKPOINT_NAMES if os.path.lexists(run_dir / name)]
    if (run_dir / "top").is_dir():
        found.append("top")
    if not found:
        return
    if not overwrite:
        raise CheckpointError(
            f"{run_dir}: holds checkpoints of an earlier run "
            f"({', '.join(found)}); continue it with --resume, replace it with "
            "--overwrite, or choose another output directory"
        )
    for name in found:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


class StopSignals:
    """While entered, SIGINT and SIGTERM set :attr:`signum` instead of killing; a second one
    raises KeyboardInterrupt. Outside the main thread (where Python takes no signals) a no-op."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                if signal.getsignal(sig) is not signal.SIG_IGN:  # a background job ignores SIGINT
                    self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _handle(self, signum: int, frame) -> None:
        if self.signum is not None:  # asked twice: stop now, without saving
            raise KeyboardInterrupt
        self.signum = signum

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def interrupted(self, saved: Path, where: str) -> TrainingInterrupted:
        """The error to raise once ``saved`` holds the state at ``where`` (e.g. 'update 57')."""
        name = signal.Signals(self.signum).name
        message = f"{name}: saved {saved} at {where}; continue with --resume"
        return TrainingInterrupted(message, self.signum)
