"""Updates whose loss or gradient norm is NaN or inf are skipped, not applied.

One such update through Adam (a fused one above all) writes NaN into every
weight and moment, and every later checkpoint would hold them. The guard
measures the gradient norm (clipping it when asked), steps the optimizer only
when it and the loss are finite, and ends the run after ``max_bad`` skipped
updates in a row: by then the run has diverged, and a lower learning rate is
the remedy.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attnkit.errors import TrainingError


class UpdateGuard:
    """Steps an optimizer only on finite updates; counts and limits the skipped ones."""

    def __init__(self, max_bad: int, setting: str = "train.max_bad_updates"):
        self.max_bad = max_bad
        self.setting = setting  # named in the error that ends the run
        self.in_a_row = 0
        self.skipped = 0  # in this process, over the whole run
        self.last_reason: str | None = None  # why the latest update was skipped; None: applied

    def step(
        self,
        optimizer: torch.optim.Optimizer,
        params: Iterable[torch.nn.Parameter],
        loss: torch.Tensor | float,
        clip: float | None,
        update: int,
        scaler: torch.amp.GradScaler | None = None,
    ) -> str | None:
        """Clip the gradients to norm ``clip`` (0 or None: no clipping), then step if all is finite.

        Returns None when the update was applied, else why it was skipped (its
        gradients are cleared). With fp16's ``scaler``, the gradients are unscaled first, and
        an overflow at a finite loss is the scaler's to handle (it lowers its scale): skipped,
        but not counted toward ``max_bad``. Raises TrainingError when ``update`` (1-based) is
        the ``max_bad``-th skipped one in a row.
        """
        params = [p for p in params if p.grad is not None]
        grads = [p.grad for p in params]
        if scaler is not None:  # fp16: the true gradients, before they are measured and clipped
            scaler.unscale_(optimizer)
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(params, clip)
        else:
            norm = _total_norm(grads)
        loss = torch.as_tensor(loss, dtype=torch.float32, device=norm.device)
        if bool(torch.isfinite(loss) & torch.isfinite(norm)):  # one device sync for both
            _step(optimizer, update, scaler)
            self.in_a_row, self.last_reason = 0, None
            return None
        optimizer.zero_grad(set_to_none=True)
        if scaler is not None and bool(torch.isfinite(loss)):
            # fp16 gradients overflowed at this loss scale: the scaler lowers it, and the run has
            # not diverged (the first updates of every fp16 run find the scale this way)
            scaler.update()
            self.last_reason = f"float16 gradients overflowed; loss scale now {scaler.get_scale()}"
            return self.last_reason
        self.in_a_row += 1
        self.skipped += 1
        reason = self.last_reason = f"loss {float(loss)}, gradient norm {float(norm)}"
        if self.in_a_row >= self.max_bad:
            raise TrainingError(
                f"update {update}: {self.in_a_row} updates in a row had a non-finite loss or "
                f"gradient norm ({reason}; {self.setting}: {self.max_bad}); the run has diverged: "
                "lower train.lr or clip the gradients"
            )
        return reason


def _total_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """The 2-norm of all gradients together (``torch.nn.utils.get_total_norm`` from torch 2.6)."""
    if not grads:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))


def _step(
    optimizer: torch.optim.Optimizer, update: int, scaler: torch.amp.GradScaler | None = None
) -> None:
    """``optimizer.step()`` (through fp16's ``scaler``, which then updates its scale); an Adam
    step size (lr / (1 - beta1^t)) past float32 ends the run."""
    try:
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            scaler.update()
    except RuntimeError as exc:
        if "overflow" not in str(exc):
            raise
        raise TrainingError(
            f"update {update}: the optimizer's step overflowed ({exc}); "
            "the run has diverged: lower train.lr"
        ) from None


def check_weights(model: torch.nn.Module, where: str) -> None:
    """TrainingError when a weight or buffer holds NaN or inf: a finite gradient times a huge
    learning rate can overflow in the update itself (and batch-norm statistics in the forward),
    and such a model must never be saved."""
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise TrainingError(
                f"{where}: {name} holds NaN or infinite values after the "
                "updates; the run has diverged: lower train.lr"
            )
