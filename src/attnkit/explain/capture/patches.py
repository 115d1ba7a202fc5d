"""Where a capture intercepts attention, and how everything is put back.

* ``torch.nn.functional.scaled_dot_product_attention`` is replaced in ``torch.nn.functional``
  (which HF transformers' SDPA attention, nn.MultiheadAttention and most code look it up in at
  each call) and in every Python module that defines one of the model's classes (or their
  bases), wherever such a module bound it to a name of its own (``from torch.nn.functional
  import scaled_dot_product_attention``): :func:`defining_modules`, :meth:`Patches.everywhere`.
* ``torch.nn.functional.multi_head_attention_forward`` likewise (nn.MultiheadAttention's path).
* torch's fused multi-head attention (nn.MultiheadAttention's and nn.TransformerEncoderLayer's
  fast path in inference, the nested-tensor path of nn.TransformerEncoder) keeps no weights and
  runs no Python: :func:`fastpath_off` turns it off for the capture
  (``torch.backends.mha.set_fastpath_enabled(False)``, process-wide, restored afterwards), and
  the fused kernels (:data:`FUSED`) are guarded so that a call from the model still reaching one
  raises a :class:`~attnkit.errors.CaptureError` instead of returning no weights.

Every replacement is undone in reverse order by :meth:`Patches.restore`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

import torch
import torch.nn.functional as F
from torch import nn

#: torch's fused attention kernels that keep no weights -> what runs them, in words
FUSED = {
    "_native_multi_head_attention": "nn.MultiheadAttention's fused fast path",
    "_transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer's fused fast path",
}


class Patches:
    """Attributes replaced for a while; :meth:`restore` puts the old values back, last first."""

    def __init__(self) -> None:
        self._undo: list[tuple[object, str, object]] = []

    def replace(self, owner: object, name: str, value: object) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def everywhere(self, modules: list[ModuleType], original: object, value: object) -> int:
        """Replace every global of ``modules`` that is ``original`` by ``value``; how many."""
        count = 0
        for module in modules:
            for name, bound in list(vars(module).items()):
                if bound is original:
                    self.replace(module, name, value)
                    count += 1
        return count

    def restore(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            setattr(owner, name, old)


def defining_modules(model: nn.Module) -> list[ModuleType]:
    """``torch.nn.functional`` and every module defining a class of the model's modules (or a
    base class of one), each once."""
    names = {F.__name__: None}
    for module in model.modules():
        for cls in type(module).__mro__:
            names.setdefault(cls.__module__, None)
    return [sys.modules[name] for name in names if name in sys.modules]


def fastpath_off() -> Callable[[], None] | None:
    """Turn torch's fused multi-head attention path off; returns what turns it back as it was, or
    None where this torch has no switch (its fused kernels are guarded all the same)."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "set_fastpath_enabled"):
        return None
    before = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    return lambda: mha.set_fastpath_enabled(before)
