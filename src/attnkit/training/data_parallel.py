"""Synchronous data parallelism over CPU processes that share one set of weights.

On a CPU, an RNN decoder runs a long chain of small matmuls, and torch's
threads split each of them poorly: 2 threads make an update well under 2x
faster than 1. Two single-threaded processes, each doing half of every batch,
use the cores better (``docs/RESULTS.md``). :class:`GradientWorkers` does this without changing
what is learnt:

* the model's parameters move to shared memory once; the helper processes
  (ranks 1..N-1) hold the same tensors, so an optimizer step in the trainer's
  process (rank 0) is seen by all of them with no copying;
* every batch is cut into N shards by rows (rows r, r+N, ... go to rank r, so
  the shards have alike lengths); each rank runs forward and backward on its
  shard with the loss summed over the shard and divided by the WHOLE batch's
  target tokens, so the shards' gradients add up to the full batch's mean
  gradient;
* the helpers write their gradients into one flat shared buffer each; rank 0
  adds them to its own and the trainer clips and steps as usual.

Only dropout differs from a single-process run: each rank draws its own masks
(seeded by rank). Evaluation, checkpoints and the schedule stay in rank 0.
"""

from __future__ import annotations

import signal
import traceback
from typing import Any

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.data.batching import Batch
from attnkit.data.vocab import PAD_ID
from attnkit.errors import AttnkitError


def shard_loss_backward(model: nn.Module, batch: Batch, total_tokens: int, label_smoothing: float) -> tuple[float, int, int]:
    """Forward and backward on ``batch`` with the loss scaled by ``1 / total_tokens``.

    Returns (summed loss, correct target tokens, target tokens) of this batch.
    With ``total_tokens = batch.num_target_tokens`` this is the ordinary
    token-mean cross entropy of one batch.
    """
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V)
    loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch.tgt_out.reshape(-1), ignore_index=PAD_ID,
                               label_smoothing=label_smoothing, reduction="sum")
    (loss_sum / total_tokens).backward()
    with torch.no_grad():
        mask = batch.tgt_out != PAD_ID
        correct = int(((logits.argmax(-1) == batch.tgt_out) & mask).sum())
    return loss_sum.detach().item(), correct, int(mask.sum())


def shard(batch: Batch, rank: int, world: int) -> Batch:
    """Rows rank, rank + world, ... of ``batch``, trimmed to their own longest source and target."""
    rows = slice(rank, None, world)
    src_lengths = batch.src_lengths[rows]
    tgt_out = batch.tgt_out[rows]
    src_len = int(src_lengths.max())
    tgt_len = int((tgt_out != PAD_ID).sum(1).max())
    return Batch(src=batch.src[rows, :src_len], src_lengths=src_lengths, tgt_in=batch.tgt_in[rows, :tgt_len],
                 tgt_out=tgt_out[:, :tgt_len], indices=batch.indices[rows])


class GradientWorkers:
    """Helper processes that compute gradients for shards of each batch (see the module docstring).

    Use as a context manager around training::

        with GradientWorkers(model, processes=2, label_smoothing=0.1, seed=1) as workers:
            optimizer.zero_grad(set_to_none=True)
            loss_sum, correct, tokens = workers.forward_backward(batch)   # grads now hold the batch mean
            optimizer.step()

    CPU only. ``model`` must stay the same object (its parameters are shared).
    """

    def __init__(self, model: nn.Module, processes: int, label_smoothing: float = 0.0, seed: int = 1,
                 threads_per_process: int = 1):
        if processes < 2:
            raise AttnkitError(f"GradientWorkers needs at least 2 processes, got {processes}")
        if any(p.device.type != "cpu" for p in model.parameters()):
            raise AttnkitError("train.processes > 1 runs on the CPU only; set train.device: cpu or train.processes: 1")
        self.model = model
        self.world = processes
        self.label_smoothing = label_smoothing
        self.params = [p for p in model.parameters() if p.requires_grad]
        model.share_memory()
        ctx = mp.get_context("spawn")  # fork after torch's thread pools start can deadlock
        self.views: list[list[Tensor]] = []  # per helper: its buffer cut into one view per parameter
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        numel = sum(p.numel() for p in self.params)
        try:
            for rank in range(1, processes):
                buffer = torch.zeros(numel).share_memory_()  # this helper's flat gradient
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker_main, daemon=True, name=f"attnkit-grad-{rank}",
                                   args=(rank, model, buffer, child, seed, threads_per_process, label_smoothing))
                proc.start()
                child.close()
                self.views.append([piece.view_as(p) for piece, p in
                                   zip(buffer.split([p.numel() for p in self.params]), self.params)])
                self.conns.append(parent)
                self.procs.append(proc)
            for rank, conn in enumerate(self.conns, 1):
                self._receive(rank, conn)  # "ready": the helper imported torch and holds the model
        except BaseException:
            self.close()
            raise

    # ---- one update --------------------------------------------------------
    def forward_backward(self, batch: Batch) -> tuple[float, int, int]:
        """Gradients of the mean token loss of ``batch`` into ``p.grad``: (summed loss, correct, tokens).

        Call with the gradients zeroed or ``None``, as before ``loss.backward()``.
        """
        total = batch.num_target_tokens
        if len(batch) < self.world:  # too few rows to share: this process does them all
            return shard_loss_backward(self.model, batch, total, self.label_smoothing)
        for rank, conn in enumerate(self.conns, 1):
            part = shard(batch, rank, self.world)
            conn.send((part.src.numpy(), part.src_lengths.numpy(), part.tgt_in.numpy(), part.tgt_out.numpy(), total))
        loss_sum, correct, tokens = shard_loss_backward(self.model, shard(batch, 0, self.world), total,
                                                        self.label_smoothing)
        for rank, (conn, views) in enumerate(zip(self.conns, self.views), 1):
            w_loss, w_correct, w_tokens = self._receive(rank, conn)
            loss_sum, correct, tokens = loss_sum + w_loss, correct + w_correct, tokens + w_tokens
            for p, piece in zip(self.params, views):
                if p.grad is None:
                    p.grad = piece.clone()
                else:
                    p.grad.add_(piece)
        return loss_sum, correct, tokens

    def _receive(self, rank: int, conn) -> Any:
        try:
            kind, payload = conn.recv()
        except EOFError:
            raise AttnkitError(f"gradient process {rank} died (exit code {self.procs[rank - 1].exitcode})") from None
        if kind == "error":
            raise AttnkitError(f"gradient process {rank} failed:\n{payload}")
        return payload

    # ---- lifetime ----------------------------------------------------------
    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
        for conn in self.conns:
            conn.close()
        self.conns, self.procs, self.views = [], [], []

    def __enter__(self) -> "GradientWorkers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _worker_main(rank: int, model: nn.Module, buffer: Tensor, conn, seed: int, threads: int,
                 label_smoothing: float) -> None:
    """A helper's loop: receive a shard, write its gradient into ``buffer``, reply (loss, correct, tokens)."""
    try:
        # rank 0 stops cleanly on these and then ends this helper
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        torch.set_num_threads(threads)
        torch.manual_seed(seed * 1000003 + rank)  # its own dropout masks
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        conn.send(("ok", "ready"))
        while True:
            msg = conn.recv()
            if msg is None:
                return
            src, src_lengths, tgt_in, tgt_out, total = msg
            batch = Batch(src=torch.from_numpy(src), src_lengths=torch.from_numpy(src_lengths),
                          tgt_in=torch.from_numpy(tgt_in), tgt_out=torch.from_numpy(tgt_out), indices=[])
            for p in params:
                p.grad = None
            result = shard_loss_backward(model, batch, total, label_smoothing)
            torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params], out=buffer)
            conn.send(("ok", result))
    except (EOFError, KeyboardInterrupt):
        return
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except (BrokenPipeError, OSError):
            pass
