"""The one switch between the reference model and its fast paths (``train.backend``,
``decode.backend``).

=============  ==================================================================================
``reference``  nn.GRU/nn.LSTM called once per step, autograd: the textbook model
``fused``      the input projection hoisted out of the step loop, torch's fused cells, one RNN
               call over the target where no step needs the previous attention; autograd
``native``     ``fused`` plus, training on a CPU, the handwritten-backward loops
               (:mod:`attnkit.accel.loops`, :mod:`attnkit.accel.recurrence`), the C kernels
               of :mod:`attnkit.accel.native` (float32) and the overrides registered by
               :mod:`attnkit.accel.overrides` (kernel scores, cheaper dropout masks)
``compile``    ``fused`` with the decoder's one-step function through ``torch.compile``
``auto``       the fastest measured on the device (docs/RESULTS.md): ``native`` on a CPU,
               ``fused`` on CUDA
=============  ==================================================================================

On CUDA, whose fused cells take no per-row input bias (the hoisted projection), ``fused`` and
``compile`` step through nn.GRU/nn.LSTM (as fast there for training, faster for decoding:
docs/RESULTS.md) and keep the one RNN call over the target.

:func:`resolve` is the only place that looks at the device, the dtype, the kernels and
``ATTNKIT_NATIVE``; models take the result through ``set_backend``. Every backend computes the same
function (tests/unit/test_equivalence.py compares each with the reference).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.accel import native
from attnkit.attention import overrides

BACKENDS = ("auto", "reference", "fused", "native", "compile")


@dataclass(frozen=True)
class Backend:
    """A resolved backend.

    cell: ``nn`` (the RNN module per step), ``fused`` (hoisted projection + torch's fused cells) or
    ``native`` (the fused path with the C kernels allowed: they still decline, per call, tensors
    they do not fit). whole_target: a decoder whose steps do not read the previous attention runs
    its RNN over the whole target in one call. handwritten_loop: training on a CPU goes through the
    handwritten-backward loops. note: why the request was not met as asked, or "".
    """

    name: str
    cell: str = "nn"
    whole_target: bool = False
    handwritten_loop: bool = False
    compiled: bool = False
    requested: str = ""
    note: str = ""

    @property
    def kernels(self) -> bool:
        """Whether the C kernels may run (else they decline and torch computes everything)."""
        return self.cell == "native"

    def trains_by_hand(self, x: Tensor) -> bool:
        """Whether the handwritten-backward loops run for input ``x``: this backend has them, on the
        CPU, with autograd recording (they exist for training; decoding needs no backward)."""
        return self.handwritten_loop and x.device.type == "cpu" and torch.is_grad_enabled()

    def scope(self):
        """The context a model computes in: the kernels and the other overrides of
        :mod:`attnkit.accel.overrides` run inside it only where this backend allows them (they are
        opt-in: outside any scope, plain torch computes everything)."""
        return overrides.allowing(self.kernels)

    def describe(self, rnn: str | None = None) -> str:
        """One line for the log, e.g. "backend: native (AVX2/FMA kernels), handwritten backward
        loop, GRU"."""
        kind = {
            "nn": "nn.GRU/nn.LSTM per step",
            "fused": "fused cells",
            "native": "AVX2/FMA kernels",
        }[self.cell]
        parts = [f"backend: {self.name} ({kind})"]
        if self.handwritten_loop:
            parts.append("handwritten backward loop")
        if self.compiled:
            parts.append("torch.compile'd decoder step")
        if rnn:
            parts.append(rnn.upper())
        line = ", ".join(parts)
        return f"{line}; {self.note}" if self.note else line

    def record(self) -> dict:
        """What checkpoints and metrics keep of it."""
        return {
            "name": self.name,
            "requested": self.requested or self.name,
            "describe": self.describe(),
        }


REFERENCE = Backend("reference")
FUSED = Backend("fused", cell="fused", whole_target=True)
COMPILE = Backend("compile", cell="fused", whole_target=True, compiled=True)
#: a model's backend until something resolves one: the CPU's choice, kernels where they fit
DEFAULT = Backend(
    "native", cell="native", whole_target=True, handwritten_loop=True, requested="auto"
)


def resolve(
    requested: str, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> Backend:
    """The backend ``requested`` (one of :data:`BACKENDS`) becomes on ``device`` for weights of
    ``dtype``. ``native`` off a CPU falls back to ``fused``, and without its kernels (another
    CPU, no compiler, ATTNKIT_NATIVE=0, float64) keeps the handwritten loops in torch; the
    returned ``note`` says why."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown backend {requested!r}; valid: {', '.join(BACKENDS)}")
    device = torch.device(device)
    if requested == "auto":
        chosen = "native" if device.type == "cpu" else "fused"
    else:
        chosen = requested
    if chosen == "reference":
        return Backend("reference", requested=requested)
    if device.type != "cpu":
        return Backend(
            "compile" if chosen == "compile" else "fused",
            whole_target=True,
            compiled=chosen == "compile",
            requested=requested,
            note=_off_cpu_note(chosen, device.type),
        )
    if chosen == "fused":
        return Backend("fused", cell="fused", whole_target=True, requested=requested)
    if chosen == "compile":
        return Backend(
            "compile", cell="fused", whole_target=True, compiled=True, requested=requested
        )
    why = native.unavailable()
    if why is None and dtype != torch.float32:
        why = f"the kernels take float32, the weights are {str(dtype).replace('torch.', '')}"
    if why is not None:
        return Backend(
            "native",
            cell="fused",
            whole_target=True,
            handwritten_loop=True,
            requested=requested,
            note=f"C kernels not used: {why}",
        )
    return Backend(
        "native", cell="native", whole_target=True, handwritten_loop=True, requested=requested
    )


def _off_cpu_note(chosen: str, device: str) -> str:
    """Why ``fused``, ``compile`` or ``native`` step through the RNN module on ``device``."""
    cells = f"torch's fused cells take no per-row input bias on {device}"
    return f"native runs on the CPU only, and {cells}" if chosen == "native" else cells
