"""``attnkit.capture(model)``: the exact attention weights of any PyTorch model's forward, with the
model running its own (fast) attention unchanged.

While the context is active, every call the model makes to ``F.scaled_dot_product_attention``
(HF transformers' ``sdpa`` implementation, nn.MultiheadAttention without weights asked, attnkit's
own Transformer, hand-written modules) runs the original kernel, whose output the model gets
untouched, and then has its weights recomputed from the call's own queries, keys, mask, scale
and causal flag (:mod:`attnkit.explain.capture.weights`). nn.MultiheadAttention asked for
weights hands over the per-head weights it computed itself. Each record knows the module that
made it (:mod:`attnkit.explain.capture.modules`), and only the layers and heads asked for are
computed (:mod:`attnkit.explain.capture.collect`).

attnkit's own attention implementations that never call SDPA (``model.attention_impl``:
``explicit``, ``chunked``, ``local``, ``linear``, ``performer``) are followed by a forward hook
on their module, which records the matrix the implementation applies (its ``implied_weights``,
from the call's own q, k and mask); each record names its ``implementation``, so the weights of
an approximation (``linear``, ``performer``) are never taken for softmax attention's.

What cannot be captured exactly says so in one line (:class:`~attnkit.errors.CaptureError`):
attention dropout in training mode, torch's fused fast path if something turns it back on
(capture turns it off: :mod:`attnkit.explain.capture.patches`), and a forward that made no
attention call capture sees (an eager implementation computing its weights itself).
"""

from __future__ import annotations

import functools
import inspect
import threading

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.attention.exact import AttentionImpl
from attnkit.errors import CaptureError
from attnkit.explain.capture.collect import Collector
from attnkit.explain.capture.modules import ModuleStack, describe, kind_of
from attnkit.explain.capture.patches import FUSED, Patches, defining_modules, fastpath_off
from attnkit.explain.capture.result import CaptureResult
from attnkit.explain.capture.weights import sdpa_call


class Capture:
    """The context manager :func:`capture` returns; ``with`` gives its :class:`CaptureResult`,
    which fills as the model runs. Leaving the block (an error included) removes every hook and
    patch and turns torch's fast path back as it was."""

    def __init__(self, model: nn.Module, layers=None, heads=None, online: str | None = None):
        if not isinstance(model, nn.Module):
            raise CaptureError(f"capture: give a torch.nn.Module, not {type(model).__name__}")
        self.model = model
        self.result = CaptureResult(online)
        self._collector = Collector(self.result, layers, heads, online)
        self._stack = ModuleStack(model, self._collector.start, self._ended)
        self._patches = Patches()
        self._restore_fastpath = None
        self._kind = threading.local()  # "self"/"cross", said by nn.MultiheadAttention
        self._impl_hooks: list = []
        self._active = False

    def __enter__(self) -> CaptureResult:
        if self._active:
            raise CaptureError("capture: this capture is active already")
        self._active = True
        try:
            self._install()
        except BaseException:
            self._uninstall()
            raise
        return self.result

    def __exit__(self, *exc) -> bool:
        self._uninstall()
        return False

    def _install(self) -> None:
        where = defining_modules(self.model)
        self._sdpa = F.scaled_dot_product_attention
        self._mha = F.multi_head_attention_forward
        self._mha_signature = inspect.signature(self._mha)
        self._patches.everywhere(where, self._sdpa, _calling(self._sdpa, self._on_sdpa))
        self._patches.everywhere(where, self._mha, _calling(self._mha, self._on_mha))
        for name, what in FUSED.items():
            if hasattr(torch, name):
                self._patches.replace(torch, name, self._guard(getattr(torch, name), what))
        self._restore_fastpath = fastpath_off()
        self._stack.attach()
        for name, module in self.model.named_modules():
            if isinstance(module, AttentionImpl) and not module.calls_sdpa:
                # credited to the attention layer holding it, as its SDPA calls would be
                holder = name.rpartition(".")[0] if name else name
                hook = functools.partial(self._on_impl, holder)
                self._impl_hooks.append(module.register_forward_hook(hook, with_kwargs=True))

    def _uninstall(self) -> None:
        for handle in self._impl_hooks:
            handle.remove()
        self._impl_hooks.clear()
        self._stack.detach()
        self._patches.restore()
        if self._restore_fastpath is not None:
            self._restore_fastpath()
            self._restore_fastpath = None
        self._active = False

    def _ended(self, module: nn.Module, failed: bool) -> None:
        self._collector.end(type(self.model).__name__, module is self.model and not failed)

    # ---- the replacements ------------------------------------------------------------------
    def _on_sdpa(self, *args, **kwargs):
        output = self._sdpa(*args, **kwargs)
        name = self._stack.caller()
        if name is not None:
            kind = getattr(self._kind, "value", None) or kind_of(name)
            self._collector.add_call(name, sdpa_call(*args, **kwargs), kind)
        return output

    def _on_mha(self, *args, **kwargs):
        name = self._stack.caller()
        if name is None:
            return self._mha(*args, **kwargs)
        bound = self._mha_signature.bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        kind = "self" if given["query"] is given["key"] else "cross"
        if not given["need_weights"]:  # the SDPA call inside is captured, told its kind
            self._kind.value = kind
            try:
                return self._mha(*args, **kwargs)
            finally:
                self._kind.value = None
        average = given["average_attn_weights"]
        given["average_attn_weights"] = False  # the same computation, the heads kept apart
        output, weights = self._mha(*bound.args, **bound.kwargs)
        batched = weights.dim() == 4  # (B, H, T, S), else (H, T, S)
        dropout = given["dropout_p"] if given["training"] else 0.0
        self._collector.add_weights(name, weights if batched else weights[None], kind, dropout)
        if average:
            weights = weights.mean(dim=1 if batched else 0)
        return output, weights

    def _on_impl(self, name: str, module: AttentionImpl, args, kwargs, output) -> None:
        """After an attnkit implementation's forward(q, k, v, key_mask, causal, p) in the layer
        ``name``: the (B, H, T, S) matrix it applied, from its own q, k and mask."""
        call = inspect.signature(module.forward).bind(*args, **kwargs)
        call.apply_defaults()
        q, k, key_mask, causal, p = (
            call.arguments[a] for a in ("q", "k", "key_mask", "causal", "p")
        )
        with torch.no_grad():
            weights = module.implied_weights(q.detach(), k.detach(), key_mask, causal)
        self._collector.add_weights(name, weights.float().cpu(), kind_of(name), p, module.name)

    def _guard(self, original, what: str):
        @functools.wraps(original)
        def guard(*args, **kwargs):
            name = self._stack.caller()
            if name is not None:
                how = (
                    "leave torch.backends.mha's fast path off while capturing"
                    if self._restore_fastpath is not None
                    else "this torch cannot turn it off: run the model with gradients enabled"
                )
                raise CaptureError(
                    f"capture: {describe(name)} ran {what}, which keeps no attention weights; {how}"
                )
            return original(*args, **kwargs)

        return guard


def _calling(original, method):
    """A function that looks like ``original`` (name, docstring, signature) and calls
    ``method``."""

    @functools.wraps(original)
    def replacement(*args, **kwargs):
        return method(*args, **kwargs)

    return replacement


def capture(model: nn.Module, layers=None, heads=None, online: str | None = None) -> Capture:
    """Capture the exact attention weights of ``model``'s forwards while it runs its own kernels::

        with attnkit.capture(model) as captured:
            model(**inputs)
        captured.stack()       # (L, B, H, T, T) the self-attention layers
        captured[0].weights    # (B, H, T, S) the first layer's, with .name, .layer, .kind
        captured.plot(0, 3)    # layer 0, head 3

    ``layers`` (numbers from 0, in the order the forward first calls them) and ``heads`` (the
    model's head numbers) choose what is computed (default: all); a layer or head the model does
    not have is a one-line :class:`~attnkit.errors.CaptureError` at the end of the forward or at
    the call. ``online="mean"`` keeps only each layer's mean over the chosen heads (B, T, S);
    ``online="rollout"`` keeps no map at all, only the attention rollout of each group of
    self-attention layers (:meth:`CaptureResult.rollout`), multiplied on as the forward runs.

    Weights are recomputed in float32 (float64 for float64 models) and returned on the CPU. The
    model's outputs are those it computes without capture, but for one difference: torch's fused
    fast path of nn.MultiheadAttention and nn.TransformerEncoderLayer (eval mode, no gradient),
    which keeps no weights, is turned off while capturing (process-wide), so those modules run
    their Python path: the same function to float rounding, except that nn.TransformerEncoder's
    nested-tensor path gives 0 at padded positions and the Python path gives their values.
    One thread at a time: the hooks and patches are the process's."""
    return Capture(model, layers, heads, online)
