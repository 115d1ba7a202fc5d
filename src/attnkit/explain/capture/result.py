"""What :func:`attnkit.capture` returns: a list of :class:`CaptureRecord`, one per attention call
kept, with the views over them (:class:`CaptureResult`).

Layers are numbered from 0 in the order the model first calls them (a decoder layer's self- and
cross-attention are two layers; a module that attends twice in one forward, such as a layer
shared across depth, is a layer per call); heads are the model's own head numbers, from 0.

Shapes: L layers, B batch, H heads (h of them kept), T queries, S keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnkit.errors import CaptureError
from attnkit.explain.capture.modules import describe, group_of


@dataclass
class CaptureRecord:
    """One attention call: where it came from and its weights.

    ``name``: the qualified name of the module that made it (``""``: the model itself);
    ``layer``: its layer number; ``call``: which of that module's calls in one forward (0 for
    most); ``forward``: which forward under the capture (0 the first); ``kind``: ``"self"`` or
    ``"cross"``; ``causal``: no query weighs a later key (``is_causal``, or a mask that says so;
    False where T != S unless ``is_causal``); ``heads``: H, the module's heads; ``head_ids``: the
    heads kept, the order of the weights' head axis; ``batch``, ``queries``, ``keys``: B, T, S;
    ``implementation``: what computed the layer's attention: ``"sdpa"`` (a call of
    ``F.scaled_dot_product_attention``, its weights recomputed), ``"mha"`` (nn.MultiheadAttention's
    own weights), or the name of one of attnkit's implementations (``model.attention_impl``:
    ``explicit``, ``chunked``, ``local``, ``linear``, ``performer``), whose weights are the matrix
    it applies (its ``implied_weights``): softmax attention's for the exact ones and ``local``
    (over its window), the normalised feature products for ``linear`` and ``performer``, which
    approximate softmax attention and are what those layers compute, not softmax weights.

    ``weights`` (B, h, T, S), CPU float32, each row summing to 1 over the keys (0 for a row whose
    every key is masked); None in the online modes. ``mean`` (B, T, S): the mean over the kept
    heads, kept instead of ``weights`` by ``online="mean"``."""

    name: str
    layer: int
    call: int
    forward: int
    kind: str
    causal: bool
    heads: int
    head_ids: tuple[int, ...]
    batch: int
    queries: int
    keys: int
    weights: Tensor | None = None
    mean: Tensor | None = None
    implementation: str = "sdpa"

    @property
    def group(self) -> str:
        """The layer stack it belongs to (:func:`attnkit.explain.capture.modules.group_of`)."""
        return group_of(self.name)

    def head_mean(self) -> Tensor | None:
        """(B, T, S) the mean over the kept heads, or None where no map was kept."""
        if self.mean is not None:
            return self.mean
        return None if self.weights is None else self.weights.mean(dim=1)

    def meta(self) -> dict[str, Any]:
        """Everything but the maps, as plain JSON types."""
        fields = ("name", "layer", "call", "forward", "kind", "causal", "heads", "batch")
        fields += ("implementation",)
        meta: dict[str, Any] = {key: getattr(self, key) for key in fields}
        meta.update(head_ids=list(self.head_ids), queries=self.queries, keys=self.keys)
        return meta

    def to_dict(self) -> dict[str, Any]:
        """:meth:`meta` with the maps kept, as nested lists rounded to 5 decimals."""
        out = self.meta()
        for key in ("weights", "mean"):
            if getattr(self, key) is not None:
                out[key] = np.round(getattr(self, key).numpy(), 5).tolist()
        return out


class CaptureResult(Sequence[CaptureRecord]):
    """The records of a capture, in call order (a list: ``len``, indexing, iteration), filled while
    the capture is active, and views over them: :meth:`stack`, :meth:`rollout`, :meth:`record`,
    :meth:`plot`, :meth:`show`, :meth:`to_dict`, :meth:`head_summary`.

    ``online``: the capture's online mode (None, ``"mean"`` or ``"rollout"``); ``layer_names``:
    the module of each layer number the forwards met (selected or not)."""

    def __init__(self, online: str | None = None):
        self.online = online
        self.layer_names: list[str] = []
        self._records: list[CaptureRecord] = []
        self._rollouts: dict[tuple[int, str], Tensor] = {}  # (forward, group) -> (B, T, T)

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index):
        return self._records[index]

    def __iter__(self) -> Iterator[CaptureRecord]:
        return iter(self._records)

    def __repr__(self) -> str:
        return (
            f"CaptureResult({len(self)} records, {len(self.layer_names)} layers, "
            f"online={self.online!r})"
        )

    def append(self, record: CaptureRecord) -> None:
        self._records.append(record)

    def add_rollout(self, forward: int, group: str, rollout: Tensor) -> None:
        self._rollouts[forward, group] = rollout

    def current_rollout(self, forward: int, group: str) -> Tensor | None:
        return self._rollouts.get((forward, group))

    # ---- choosing records ------------------------------------------------------------------
    def forwards(self) -> list[int]:
        """The forwards that left records or rollouts, in order."""
        found = {r.forward for r in self._records} | {f for f, _ in self._rollouts}
        return sorted(found)

    def _forward(self, forward: int) -> int:
        seen = self.forwards()
        if not seen:
            raise CaptureError(
                "capture: nothing was captured: run the model's forward inside the with block"
            )
        if not -len(seen) <= forward < len(seen):
            raise CaptureError(f"forward {forward}: this capture saw {len(seen)} forward(s)")
        return seen[forward]

    def select(
        self, kind: str | None = None, group: str | None = None, forward: int = -1
    ) -> list[CaptureRecord]:
        """The records of one forward (``forward``: 0 the first, -1 the last) of ``kind``
        (``"self"``, ``"cross"``, None both) in ``group`` (None: every group)."""
        number = self._forward(forward)
        return [
            r
            for r in self._records
            if r.forward == number
            and (kind is None or r.kind == kind)
            and (group is None or r.group == group)
        ]

    def _one_shape(self, records: list[CaptureRecord], what: str) -> None:
        """CaptureError unless ``records`` share one shape, naming the groups otherwise."""
        shapes = {(r.batch, len(r.head_ids), r.queries, r.keys) for r in records}
        if len(shapes) > 1:
            groups: dict[str, tuple] = {}
            for r in records:
                groups.setdefault(r.group, (r.queries, r.keys))
            listed = ", ".join(f"{describe(g)} (T={t}, S={s})" for g, (t, s) in groups.items())
            raise CaptureError(
                f"{what}: the layers differ in shape ({listed}): choose one with group=..."
            )

    # ---- views -----------------------------------------------------------------------------
    def stack(self, group: str | None = None, forward: int = -1) -> Tensor:
        """(L, B, h, T, T): the self-attention layers' weights of one forward (of ``group`` when
        given), in layer order."""
        records = self.select("self", group, forward)
        kept = [r for r in records if r.weights is not None]
        if not kept:
            why = f" (online={self.online!r} keeps no maps)" if self.online else ""
            raise CaptureError(f"stack: no self-attention weights were kept{why}")
        self._one_shape(kept, "stack")
        return torch.stack([r.weights for r in kept])

    def rollout(self, group: str | None = None, forward: int = -1) -> Tensor:
        """(B, T, T) Abnar & Zuidema's attention rollout through the self-attention layers of
        ``group`` (the only group when None), heads averaged, the residual added as 0.5 (A + I)
        (:mod:`attnkit.explain.rollout`): kept while the forward ran with ``online="rollout"``,
        else computed from the kept maps."""
        number = self._forward(forward)
        if self.online == "rollout":
            groups = [g for f, g in self._rollouts if f == number]
            return self._rollouts[number, self._group(groups, group, "rollout")]
        from attnkit.explain.rollout import rollout

        records = self.select("self", None, forward)
        chosen = self._group(list(dict.fromkeys(r.group for r in records)), group, "rollout")
        means = [r.head_mean() for r in records if r.group == chosen]
        if any(m is None for m in means) or not means:
            raise CaptureError("rollout: no self-attention maps were kept for it")
        self._one_shape([r for r in records if r.group == chosen], "rollout")
        layers = torch.stack(means)  # (L, B, T, T)
        return torch.stack([rollout(layers[:, b]) for b in range(layers.size(1))])

    @staticmethod
    def _group(groups: list[str], group: str | None, what: str) -> str:
        if group is not None and group in groups:
            return group
        if group is None and len(groups) == 1:
            return groups[0]
        listed = ", ".join(repr(g) for g in groups) or "none"
        which = "choose one" if group is None else f"no group {group!r}"
        raise CaptureError(f"{what}: {which} of the self-attention groups: {listed}")

    def head_summary(
        self,
        index: int = 0,
        group: str | None = None,
        forward: int = -1,
        period: int | None = None,
        offset: int = 0,
    ):
        """The :class:`~attnkit.explain.head_summary.HeadSummary` (entropy, sink share,
        previous-token score, distance profile; the induction score when the input was
        ``[offset tokens, x, x]`` with len(x) = ``period``) of batch element ``index``'s
        self-attention layers of ``group`` (the only group when None), counted from 0 in their
        order within the group (``modules`` names each), every head kept."""
        from attnkit.explain.capture.views import _check_index
        from attnkit.explain.head_summary import summarize

        records = self.select("self", None, forward)
        chosen = self._group(list(dict.fromkeys(r.group for r in records)), group, "head_summary")
        kept = [r for r in records if r.group == chosen]
        if any(r.weights is None for r in kept):
            raise CaptureError(f"head_summary: online={self.online!r} keeps no maps to summarize")
        if any(r.head_ids != tuple(range(r.heads)) for r in kept):
            raise CaptureError("head_summary: capture every head (heads=None) to summarize them")
        self._one_shape(kept, "head_summary")
        _check_index(index, kept[0].batch)
        maps = torch.stack([r.weights[index] for r in kept])  # (L, H, T, T)
        title = f"{describe(chosen)}: self-attention heads"
        about = {"modules": [r.name for r in kept], "first": 0, "title": title}
        causal = all(r.causal for r in kept)
        return summarize(maps, causal, period, offset, **about)

    def record(self, index: int = 0, group: str | None = None, kind: str | None = None, **view):
        """One batch element's maps as an :class:`attnkit.viz.AttentionRecord`: ``heads``
        (T, L, h, S) of the layers of ``group`` and ``kind`` (self-attention where there is any),
        ``weights`` their mean, and the rollout for self-attention. ``source_tokens`` /
        ``output_tokens`` label the keys and queries (positions by default); ``forward`` as in
        :meth:`select`."""
        from attnkit.explain.capture.views import attention_record

        return attention_record(self, index, group, kind, **view)

    def plot(self, layer: int, head: int | None = None, path_or_ax=None, index: int = 0, **view):
        """The heatmap (T, S) of layer ``layer``'s head ``head`` (its mean over the kept heads when
        None) for batch element ``index``: to a file (.png, .svg, .pdf), into an ``Axes``, or onto
        a new figure, which is returned. Layer and head count from 0, as :func:`capture` does."""
        from attnkit.explain.capture.views import plot_layer

        return plot_layer(self, layer, head, path_or_ax, index, **view)

    def show(self, index: int = 0, group: str | None = None, **view):
        """The interactive view of :meth:`record` (a layer and head choice): inline in a notebook,
        else a page in a temporary file, whose path is returned."""
        from attnkit.viz.inline import record_html, show_html

        return show_html(record_html(self.record(index, group, **view)))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: the layers' modules, every record (:meth:`CaptureRecord.to_dict`) and
        the online rollouts (``"forward:group"`` -> (B, T, T) lists)."""
        return {
            "online": self.online,
            "layer_names": list(self.layer_names),
            "records": [r.to_dict() for r in self._records],
            "rollouts": {
                f"{f}:{g}": np.round(t.numpy(), 5).tolist() for (f, g), t in self._rollouts.items()
            },
        }
