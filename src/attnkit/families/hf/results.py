"""What a pretrained model's ``classify``, ``encode``, ``generate`` and ``translate`` return: a
:class:`PretrainedResult`, every layer's and head's attention of the forward that answered, with
the views every attnkit result has (``show()``, ``plot(path_or_ax, layer=, head=)``,
``to_dict()``) and ``rollout()``.

A result holds one :class:`Part` per attention stack: ``"self"`` for a model of one stack (an
encoder, a classifier, a decoder-only language model, ViT), ``"encoder"``, ``"decoder"`` and
``"cross"`` for an encoder-decoder. The views draw its *main* part unless told another: the
cross-attention of a translation (output tokens over source tokens, as attnkit's own translations
show theirs), the self-attention otherwise. Layers and heads count from 1, as ``plot`` of every
attnkit result does (``attnkit.capture``'s records count from 0). ``words=True`` merges subword
tokens into words (:mod:`attnkit.families.hf.words`).

Shapes: L layers, H heads, T queries, S keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.errors import AttnkitError
from attnkit.families.hf.words import Tokens, merge
from attnkit.viz.records import AttentionRecord


@dataclass
class Part:
    """One stack's attention: ``heads`` (L, H, T, S) float32, each row summing to 1; the
    ``queries`` (T) and ``keys`` (S) as :class:`Tokens`; ``modules``, the module of each layer;
    ``kind``: ``"self"`` or ``"cross"``; ``causal``: no query weighs a later key."""

    heads: np.ndarray
    queries: Tokens
    keys: Tokens
    modules: list[str]
    kind: str = "self"
    causal: bool = False

    @property
    def layers_and_heads(self) -> tuple[int, int]:
        return self.heads.shape[0], self.heads.shape[1]


@dataclass
class PretrainedResult:
    """One input answered by a pretrained model, and where its attention looked.

    ``model``: what it was loaded as (``hf:NAME``); ``task``: ``classify``, ``encode``,
    ``generate`` or ``translate``; ``source``: the input (a text, or an image's size);
    ``output``: the label, the generated text or the translation (``""`` for ``encode``);
    ``parts``: name -> :class:`Part`. A classifier's ``label``, ``probs`` (label ->
    probability) and ``logits`` (C,); a generator's ``ids``, the sequence its ``generate``
    returned; an encoder's ``states`` (T, D), its last hidden states."""

    model: str
    task: str
    source: str
    output: str
    parts: dict[str, Part]
    label: str | None = None
    probs: dict[str, float] | None = None
    logits: np.ndarray | None = None
    ids: list[int] | None = None
    states: np.ndarray | None = field(default=None, repr=False)
    #: an image model's picture as it read it (H, W, 3) uint8, and its patches' (rows, cols,
    #: the first patch's position) (:mod:`attnkit.families.hf.pictures`)
    picture: np.ndarray | None = field(default=None, repr=False)
    patches: tuple[int, int, int] | None = None

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}: {p.heads.shape}" for n, p in self.parts.items())
        return f"PretrainedResult({self.task} {self.source!r} -> {self.output!r}; {shapes})"

    # ---- the main part, as attnkit's translations expose theirs ---------------------------
    @property
    def main(self) -> str:
        """The part the views draw by default: ``cross`` where there is one, else the first."""
        return "cross" if "cross" in self.parts else next(iter(self.parts))

    @property
    def source_tokens(self) -> list[str]:
        """The main part's keys (the columns of its maps)."""
        return list(self.parts[self.main].keys.labels)

    @property
    def output_tokens(self) -> list[str]:
        """The main part's queries (the rows of its maps)."""
        return list(self.parts[self.main].queries.labels)

    @property
    def heads(self) -> np.ndarray:
        """(T, L, H, S) every layer's and head's map of the main part."""
        return self.parts[self.main].heads.transpose(2, 0, 1, 3)

    @property
    def weights(self) -> np.ndarray:
        """(T, S) the mean of the main part's layers and heads."""
        return self.parts[self.main].heads.mean(axis=(0, 1))

    def part(self, name: str | None = None) -> Part:
        """The part ``name`` (None: :attr:`main`); a one-line error naming those there are."""
        name = self.main if name is None else name
        if name not in self.parts:
            raise AttnkitError(f"part {name!r}: this result has {', '.join(self.parts)}")
        return self.parts[name]

    # ---- views -------------------------------------------------------------------------------
    def rollout(self, part: str | None = None, words: bool = False) -> np.ndarray:
        """Attention rollout (Abnar & Zuidema 2020; :mod:`attnkit.explain.rollout`) of ``part``:
        (T, T) through a self-attention stack's layers, heads averaged, the residual added; for
        ``cross``, (T, S) each output step over the source through the encoder (the decoder's
        cross-attention, averaged over its layers and heads, times the encoder's rollout)."""
        from attnkit.explain.rollout import cross_rollout, rollout

        name = self.main if part is None else part
        chosen = self.part(name)
        if chosen.kind == "cross":
            encoder = self.part("encoder").heads.mean(1)  # (L, S, S)
            cross = chosen.heads.mean(axis=(0, 1))  # (T, S)
            rolled = cross_rollout(torch.from_numpy(cross), torch.from_numpy(encoder)).numpy()
        else:
            if chosen.heads.shape[2] != chosen.heads.shape[3]:
                raise AttnkitError(f"rollout: part {name!r} is not square (T != S)")
            rolled = rollout(torch.from_numpy(chosen.heads.mean(1))).numpy()  # (T, T)
        return self._merged(rolled, chosen, words)

    def head_summary(self, part: str | None = None):
        """The :class:`~attnkit.explain.head_summary.HeadSummary` of ``part``'s every layer and
        head on this input (entropy, sink share, previous-token score, distance profile; the
        induction score is :meth:`PretrainedModel.head_summary
        <attnkit.families.hf.model.PretrainedModel.head_summary>`'s, on a repeated sequence), layers
        and heads counted from 1."""
        from attnkit.explain.head_summary import summarize

        name = self.main if part is None else part
        chosen = self.part(name)
        title = f"{self.title(name)} heads on {self.source!r}"[:120]
        return summarize(chosen.heads, chosen.causal, modules=list(chosen.modules), title=title)

    def record(self, part: str | None = None, words: bool = False) -> AttentionRecord:
        """``part`` (None: :attr:`main`) as an :class:`~attnkit.viz.AttentionRecord`: heads
        (T, L, H, S), their mean, and the rollout; ``words``: subwords merged to words."""
        name = self.main if part is None else part
        chosen = self.part(name)
        heads = self._merged(chosen.heads, chosen, words).transpose(2, 0, 1, 3)  # (T, L, H, S)
        rolled = None
        if chosen.kind == "cross" or chosen.heads.shape[2] == chosen.heads.shape[3]:
            rolled = self.rollout(name, words)
        queries, keys = (chosen.queries, chosen.keys)
        rows = queries.unit_labels() if words else queries.labels
        cols = keys.unit_labels() if words else keys.labels
        return AttentionRecord(
            self.source,
            cols,
            self.output,
            rows,
            heads.mean(axis=(1, 2)),
            heads=heads,
            rollout=rolled,
        )

    @staticmethod
    def _merged(maps: np.ndarray, part: Part, words: bool) -> np.ndarray:
        return merge(maps, part.queries, part.keys) if words else np.asarray(maps, np.float64)

    def _check(self, part: str | None, layer: int | None, head: int | None) -> None:
        name = self.main if part is None else part
        layers, heads = self.part(name).layers_and_heads
        for what, value, count in (("layer", layer, layers), ("head", head, heads)):
            if value is not None and not (isinstance(value, int) and 1 <= value <= count):
                raise AttnkitError(
                    f"{what} {value}: {self.model}'s {name} attention has {what}s 1 to {count} "
                    "(counted from 1)"
                )

    def title(self, part: str | None = None) -> str:
        name = self.main if part is None else part
        what = "cross-attention" if name == "cross" else f"{name} attention"
        return f"{self.model}: {what}"

    def plot(
        self,
        path_or_ax=None,
        layer: int | None = None,
        head: int | None = None,
        part: str | None = None,
        words: bool = False,
    ):
        """Draw ``part``'s map (the mean of every layer and head; ``layer`` / ``head``, from 1,
        pick one layer, one head or both) with matplotlib: into an ``Axes``, to a file (.png,
        .svg, .pdf) or onto a new figure. Returns the figure."""
        from attnkit.viz.heads import choose_map, map_title
        from attnkit.viz.heatmap import plot_heatmap

        self._check(part, layer, head)
        record = choose_map(self.record(part, words), layer, head)
        title = f"{self.title(part)}, {map_title(layer, head)}"
        if path_or_ax is None or isinstance(path_or_ax, (str, Path)):
            return plot_heatmap(record, path=path_or_ax, title=title)
        return plot_heatmap(record, ax=path_or_ax, title=title)

    def show(self, part: str | None = None, words: bool = False) -> Path | None:
        """The interactive map of ``part`` with its choice of every layer and head (and the
        rollout), and for an image the picture with each layer's [CLS] row over its patches:
        inline in a notebook, else a page in a temporary file, whose path is returned."""
        from attnkit.viz.inline import show_html

        return show_html(self.html(part, words))

    def html(self, part: str | None = None, words: bool = False) -> str:
        """The HTML fragment :meth:`show` displays."""
        from attnkit.viz.inline import record_html

        page = record_html(self.record(part, words), self.title(part))
        if self.picture is None or self.patches is None or part not in (None, self.main):
            return page
        from attnkit.families.hf.pictures import picture_html

        return page + "\n" + picture_html(self)  # and the [CLS] row over the picture

    def _repr_html_(self) -> str:
        return self.html()

    def to_dict(self, words: bool = False) -> dict[str, Any]:
        """Plain JSON types: the answer and every part's tokens, modules and maps (L, H, T, S),
        rounded to 5 decimals (``words``: merged to words)."""
        parts = {}
        for name, p in self.parts.items():
            parts[name] = {
                "kind": p.kind,
                "query_tokens": p.queries.unit_labels() if words else list(p.queries.labels),
                "key_tokens": p.keys.unit_labels() if words else list(p.keys.labels),
                "modules": list(p.modules),
                "heads": np.round(self._merged(p.heads, p, words), 5).tolist(),
            }
        return {
            "model": self.model,
            "task": self.task,
            "source": self.source,
            "output": self.output,
            "label": self.label,
            "probs": None if self.probs is None else {k: float(v) for k, v in self.probs.items()},
            "ids": None if self.ids is None else [int(i) for i in self.ids],
            "parts": parts,
        }
