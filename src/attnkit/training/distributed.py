"""Data-parallel training over the processes ``torchrun`` starts (torch.distributed + DDP).

    torchrun --nproc_per_node 2 -m attnkit train CONFIG

Without torchrun's environment (``WORLD_SIZE`` unset or 1) nothing here runs and training is
one process. Under it:

* the process group comes from torchrun's variables: gloo on the CPU, NCCL on CUDA (rank r
  uses GPU ``LOCAL_RANK``);
* every rank builds the same token-bucketed batch list from the same seed and trains on its
  share of each global batch (rows r, r + N, ...: :func:`shard`). Its loss is summed over its
  rows, divided by the global batch's target tokens and multiplied by N; DDP averages the N
  gradients, so each rank then holds the 1-process gradient of the whole global batch;
* rank 0 alone holds the run-directory lock, evaluates, logs and writes checkpoints; the
  others wait for it;
* every rank dies with its launcher (:func:`die_with_launcher`): kill -9 of torchrun sends each
  rank SIGTERM, which stops it cleanly after its update (rank 0 saves ``last``), instead of
  leaving orphans that train on;
* what decides or shapes an update (a stop signal, the time budget, the learning rate, early
  stopping) is agreed by a collective, so every rank takes the same updates and a SIGTERM
  that reaches some ranks stops all of them after the same update.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn

from attnkit.data.batching import Batch
from attnkit.data.vocab import PAD_ID
from attnkit.device import resolve_device
from attnkit.errors import AttnkitError, ConfigError

ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
LAUNCH = "torchrun --nproc_per_node N -m attnkit train CONFIG"


def world_size() -> int:
    """The number of processes torchrun started (``WORLD_SIZE``; 1 without torchrun)."""
    return _env_int("WORLD_SIZE", 1)


def rank() -> int:
    """This process's rank among torchrun's (``RANK``; 0 without torchrun)."""
    return _env_int("RANK", 0) if world_size() > 1 else 0


def shard(batch: Batch, rank: int, world: int) -> Batch | None:
    """Rows rank, rank + world, ... of ``batch`` trimmed to their own longest source and
    target; None when the batch has too few rows to give this rank any.

    Rows are sorted longest target first, so the shards have alike lengths.
    """
    rows = slice(rank, None, world)
    src_lengths = batch.src_lengths[rows]  # (B / world,)
    if len(src_lengths) == 0:
        return None
    tgt_out = batch.tgt_out[rows]
    src_len = int(src_lengths.max())
    tgt_len = int((tgt_out != PAD_ID).sum(1).max())
    return Batch(
        src=batch.src[rows, :src_len],
        src_lengths=src_lengths,
        tgt_in=batch.tgt_in[rows, :tgt_len],
        tgt_out=tgt_out[:, :tgt_len],
        indices=batch.indices[rows],
    )


class Distributed:
    """This process's place in the group, and the few collectives the trainer needs."""

    def __init__(self, rank: int, world: int, device: torch.device):
        self.rank, self.world, self.device = rank, world, device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, batch: Batch) -> tuple[Batch, float]:
        """This rank's rows of a global batch and the loss scale that makes DDP's mean of
        the ranks' gradients the whole batch's gradient (see the module docstring).

        A rank left without rows runs the batch's first row with scale 0: DDP needs every
        rank's backward, and a zero gradient adds nothing.
        """
        part = shard(batch, self.rank, self.world)
        if part is None:
            return shard(batch, 0, len(batch)), 0.0
        return part, float(self.world)

    def wrap(self, model: nn.Module) -> nn.Module:
        """``model`` in DistributedDataParallel (rank 0's weights are copied to every rank)."""
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def agree(self, signum: int | None, elapsed_s: float) -> tuple[int | None, float]:
        """(a stop signal any rank received, the longest elapsed time): the same on all ranks."""
        values = self._reduce([float(signum or 0), elapsed_s], dist.ReduceOp.MAX)
        return int(values[0]) or None, values[1]

    def sum(self, values: Sequence[float]) -> list[float]:
        """Each value summed over the ranks."""
        return self._reduce(values, dist.ReduceOp.SUM)

    def from_main(self, values: Sequence[float]) -> list[float]:
        """Rank 0's ``values`` on every rank."""
        tensor = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        dist.broadcast(tensor, src=0)
        return tensor.tolist()

    def check(self, error: BaseException | None) -> None:
        """Return on every rank when no rank failed; else raise ``error`` where it happened and
        an AttnkitError on the others (the failing rank prints the reason)."""
        failed = self._reduce([0.0 if error is None else float(self.rank + 1)], dist.ReduceOp.MAX)
        if error is not None:
            raise error
        if failed[0]:
            raise AttnkitError(
                f"rank {self.rank}: stopped because rank {int(failed[0]) - 1} "
                "failed (it prints why)"
            )

    def check_same(self, digest: bytes, what: str) -> None:
        """AttnkitError on every rank unless ``digest`` is the same on all of them."""
        value = int.from_bytes(digest[:7], "big")  # 56 bits: exact in an int64 tensor
        tensor = torch.tensor([value, -value], dtype=torch.int64, device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        if int(tensor[0]) != -int(tensor[1]):
            raise AttnkitError(
                f"the {self.world} processes built different {what}; every node "
                "must see the same data files and config"
            )

    def _reduce(self, values: Sequence[float], op) -> list[float]:
        tensor = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=op)
        return tensor.tolist()


@contextmanager
def start(device_name: str) -> Iterator[Distributed | None]:
    """The process group torchrun's environment describes, for the block; None without one."""
    world = world_size()
    if world <= 1:
        yield None
        return
    missing = [name for name in ENV if not os.environ.get(name, "").strip()]
    if missing:
        raise ConfigError(
            f"WORLD_SIZE={world} but {', '.join(missing)} not set; start "
            f"data-parallel training with {LAUNCH}"
        )
    die_with_launcher()
    device = resolve_device(device_name)
    if device.type == "cuda":
        device = torch.device("cuda", _env_int("LOCAL_RANK"))
        torch.cuda.set_device(device)
    owner = not dist.is_initialized()
    if owner:
        try:
            # rank 0 evaluates, averages and saves while the others wait in a collective: allow
            # for long evaluations (torch's default is 10 minutes for NCCL)
            dist.init_process_group(
                "nccl" if device.type == "cuda" else "gloo", timeout=timedelta(hours=2)
            )
        except (RuntimeError, ValueError) as exc:
            raise AttnkitError(f"torchrun: the process group did not start: {exc}") from None
    try:
        yield Distributed(dist.get_rank(), dist.get_world_size(), device)
    finally:
        if owner:
            dist.destroy_process_group()


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_launcher(signum: int = signal.SIGTERM, poll_s: float = 1.0) -> None:
    """Have ``signum`` sent to this process when its parent (torchrun) dies, however it dies.

    Linux: ``prctl(PR_SET_PDEATHSIG)``; elsewhere (or where prctl fails) a daemon thread that
    checks the parent every ``poll_s`` seconds. A parent already gone (this process adopted)
    sends the signal at once. The signal is a trainer's SIGTERM: it stops after the update in
    flight, rank 0 saving ``last`` (:class:`attnkit.training.rundir.StopSignals`).
    """
    parent = os.getppid()
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the launcher died before the request was made
        os.kill(os.getpid(), signum)
        return
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent, signum, poll_s), daemon=True).start()


def _watch_parent(parent: int, signum: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    os.kill(os.getpid(), signum)


def on_main(dist: Distributed | None, fn, default=None):
    """``fn()`` in the main process (every process without DDP); under DDP the others wait, and
    all stop if it fails."""
    if dist is None:
        return fn()
    result, error = default, None
    if dist.is_main:
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - re-raised by check() here, reported there
            error = exc
    dist.check(error)
    return result


def on_all(dist: Distributed | None, fn):
    """``fn()`` in every process; under DDP all stop if it fails in any."""
    if dist is None:
        return fn()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001
        dist.check(exc)
    dist.check(None)
    return result


def start_data_parallel(dist: Distributed, bundle, examples: list, seed: int, log) -> nn.Module:
    """Check that every rank holds the same vocabularies and training examples, give each rank
    but 0 its own dropout (``seed``; rank 0 keeps the generator of a 1-process run), and return
    the bundle's model wrapped in DistributedDataParallel."""
    fingerprint = digest(
        bundle.sides.src_vocab.to_json(),
        bundle.sides.tgt_vocab.to_json(),
        [(e.src, e.tgt) for e in examples],
    )
    dist.check_same(fingerprint, "vocabularies or training examples")
    if not dist.is_main:
        torch.manual_seed(seed)
    wrapped = dist.wrap(bundle.model)
    backend = "nccl" if dist.device.type == "cuda" else "gloo"
    log(
        f"DistributedDataParallel: {dist.world} processes ({backend}), "
        f"{torch.get_num_threads()} thread(s) each; rank 0 evaluates and saves"
    )
    return wrapped


def digest(*parts: object) -> bytes:
    """A fingerprint of ``parts`` (their reprs) for :meth:`Distributed.check_same`."""
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode("utf-8"))
    return h.digest()


def _env_int(name: str, default: int | None = None) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw and default is not None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(
            f"environment variable {name}={raw!r}: expected an integer (torchrun sets it: {LAUNCH})"
        ) from None
