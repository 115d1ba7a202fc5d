"""Head summaries: a few numbers per layer and head that make a big model's many heads (BERT-base
has 144) readable, computed from attention maps however they were captured.

For each layer and head of a stack of maps ``w`` (L, H, T, S), rows (queries) ``i``, columns
(keys) ``j``:

* ``entropy``: the mean over query rows of :math:`-\\sum_j w_{ij} \\log w_{ij}`, in nats;
  ``entropy_max`` is the same mean for uniform rows over every key a row may see (log S, or
  log(i + 1) for causal self-attention): the most a head can spread;
* ``sink``: the attention-sink share, the mean weight on the first key (``[CLS]``, ``<s>`` or
  simply the first token), where many heads of trained models park their weight;
* ``previous``: the previous-token score, the mean weight of row i on key i - 1 (rows 1..T-1);
* ``induction``: on a sequence holding a random block x twice, ``[prefix, x, x]`` (Olsson et al.
  2022, "In-context learning and induction heads"), the mean weight from each position i of the
  second copy to i - n + 1, the token after the same token's earlier occurrence (n = len(x));
  only for maps of such a sequence (``period=``);
* ``profile`` (L, H, T): the mean over query rows of the weight at distance d = |i - j| (i - j for
  causal attention), a distribution over d (each row's weights sum to 1); ``distance`` (L, H),
  its mean, the expected distance between a query and what it reads.

``previous``, ``induction`` and the distance profile need self-attention (T = S); they are None
for cross-attention. Rows of a padded input count as they are: summarize one unpadded input.
:meth:`HeadSummary.rows`, :meth:`~HeadSummary.top` and :meth:`~HeadSummary.table` sort the heads
by any score; :meth:`~HeadSummary.plot` draws a layer x head grid per score;
:meth:`~HeadSummary.show` the grids and a sortable table inline in a notebook.
"""

from __future__ import annotations

import base64
import html
import io
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.errors import AttnkitError

#: the sortable scores, in the order tables and pictures show them
SCORES = ("entropy", "sink", "previous", "induction", "distance")
#: what each score is, in a few words (column titles of pictures and tables)
MEANING = {
    "entropy": "entropy (nats)",
    "sink": "sink share (weight on token 0)",
    "previous": "previous-token score",
    "induction": "induction score",
    "distance": "mean distance |i - j|",
}


@dataclass
class HeadSummary:
    """The scores of every layer and head of one stack of maps (see the module's docstring);
    arrays (L, H) count layers and heads from 0, :meth:`rows`, tables and pictures from
    ``first`` (1, as plots of attnkit's results count; 0 for :func:`attnkit.capture`'s records).

    ``tokens``: T, the queries summarized; ``causal``: the maps are causal self-attention;
    ``period``: n of the repeated sequence the induction score was measured on (None: none);
    ``offset``: where its first copy starts; ``modules``: each layer's module; ``title``: what
    the maps are."""

    entropy: np.ndarray
    entropy_max: float
    sink: np.ndarray
    previous: np.ndarray | None
    induction: np.ndarray | None
    profile: np.ndarray | None
    tokens: int
    causal: bool = False
    period: int | None = None
    offset: int = 0
    modules: list[str] = field(default_factory=list)
    first: int = 1
    title: str = "attention heads"

    @property
    def distance(self) -> np.ndarray | None:
        """(L, H) the mean of each head's distance profile; None for cross-attention."""
        if self.profile is None:
            return None
        return self.profile @ np.arange(self.profile.shape[-1], dtype=np.float64)

    @property
    def layers_and_heads(self) -> tuple[int, int]:
        return self.entropy.shape  # type: ignore[return-value]

    def scores(self) -> dict[str, np.ndarray]:
        """Score name -> (L, H), for the scores these maps have (:data:`SCORES` order)."""
        found = {name: getattr(self, name) for name in SCORES}
        return {name: value for name, value in found.items() if value is not None}

    def _score(self, name: str) -> np.ndarray:
        scores = self.scores()
        if name not in scores:
            have = ", ".join(scores)
            why = " (measured on a repeated sequence only)" if name == "induction" else ""
            raise AttnkitError(f"score {name!r}: this summary has {have}{why}")
        return scores[name]

    # ---- rows --------------------------------------------------------------------------------
    def rows(self, sort: str | None = None, lowest: bool = False) -> list[dict[str, Any]]:
        """One dict per head: ``layer``, ``head`` (from :attr:`first`) and every score, in layer
        and head order, or sorted by the score ``sort`` (highest first unless ``lowest``)."""
        scores = self.scores()
        layers, heads = self.layers_and_heads
        out = [
            {
                "layer": layer + self.first,
                "head": head + self.first,
                **{name: float(value[layer, head]) for name, value in scores.items()},
            }
            for layer in range(layers)
            for head in range(heads)
        ]
        if sort is not None:
            self._score(sort)
            out.sort(key=lambda row: row[sort], reverse=not lowest)  # stable: ties keep order
        return out

    def top(self, score: str, k: int = 5, lowest: bool = False) -> list[dict[str, Any]]:
        """The ``k`` heads highest in ``score`` (lowest with ``lowest``), as :meth:`rows`."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise AttnkitError(f"k must be a whole number at least 1, got {k!r}")
        return self.rows(score, lowest)[:k]

    def table(self, sort: str | None = None, k: int | None = None, lowest: bool = False) -> str:
        """A text table of :meth:`rows` (sorted by ``sort``, the first ``k``), one head a line."""
        rows = self.rows(sort, lowest)[:k]
        names = list(self.scores())
        lines = ["layer head " + " ".join(f"{n:>9}" for n in names)]
        lines += [
            f"{r['layer']:>5} {r['head']:>4} " + " ".join(f"{r[n]:>9.3f}" for n in names)
            for r in rows
        ]
        return "\n".join(lines)

    # ---- views -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types: every score as (L, H) lists, the distance profile (L, H, T), the
        rows, and what the maps were (rounded to 5 decimals)."""
        return {
            "title": self.title,
            "tokens": self.tokens,
            "causal": self.causal,
            "period": self.period,
            "offset": self.offset,
            "first": self.first,
            "modules": list(self.modules),
            "entropy_max": round(float(self.entropy_max), 5),
            "scores": {n: np.round(v, 5).tolist() for n, v in self.scores().items()},
            "profile": None if self.profile is None else np.round(self.profile, 5).tolist(),
            "rows": [{k: _rounded(v) for k, v in row.items()} for row in self.rows()],
        }

    def plot(self, path: str | Path | None = None, scores=None):
        """A layer (rows) x head (columns) grid per score (``scores``: names, default all), each
        on its own colour scale, into a new figure, saved to ``path`` (.png, .svg, .pdf) when
        given. Returns the figure."""
        from attnkit.viz.heads import plot_score_grids

        if scores is None:
            scores = list(self.scores())
        names = [scores] if isinstance(scores, str) else list(scores)
        grids = {MEANING[n]: self._score(n) for n in names}
        # shares on 0..1 and entropy up to uniform's, so that pictures of two models compare
        limits = {MEANING[n]: (0.0, 1.0) for n in ("sink", "previous", "induction")}
        limits[MEANING["entropy"]] = (0.0, self.entropy_max)
        return plot_score_grids(grids, path, first=self.first, title=self.title, limits=limits)

    def html(self, sort: str | None = None) -> str:
        """The HTML fragment :meth:`show` displays: the grids as a PNG and a table of every head
        whose columns sort on a click."""
        figure, buffer = self.plot(), io.BytesIO()
        figure.savefig(buffer, format="png", dpi=96)
        figure.clear()
        uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        picture = f'<img alt="{html.escape(self.title)}" src="{uri}" style="max-width:100%">'
        names = list(self.scores())
        head = "".join(f"<th>{html.escape(n)}</th>" for n in ("layer", "head", *names))
        body = "".join(
            "<tr>"
            + "".join(f"<td>{_cell(row[n])}</td>" for n in ("layer", "head", *names))
            + "</tr>"
            for row in self.rows(sort)
        )
        box = f"attnkit-heads-{uuid.uuid4().hex[:12]}"
        return (
            f'<div class="attnkit-heads" id="{box}" style="font:13px system-ui,sans-serif">'
            f"<p>{html.escape(self.title)}: {self.tokens} tokens; uniform entropy "
            f"{self.entropy_max:.3f} nats; click a column to sort</p>{picture}"
            f'<table style="max-height:24em;display:block;overflow:auto">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
            f"<script>(function(){{var t=document.querySelector('#{box} table');"
            f"{_SORT_SCRIPT}}})();</script>"
        )

    def show(self, sort: str | None = None) -> Path | None:
        """The grids and the sortable table: inline in a notebook, else a page in a temporary
        file, whose path is returned."""
        from attnkit.viz.inline import show_html

        return show_html(self.html(sort), "attnkit-heads")

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        layers, heads = self.layers_and_heads
        return (
            f"HeadSummary({self.title}: {layers} layers x {heads} heads, {self.tokens} tokens; "
            f"{', '.join(self.scores())})"
        )


def _rounded(value):
    return round(value, 5) if isinstance(value, float) else value


def _cell(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


# sorts the table ``t`` by the clicked column (numbers: highest first; clicked again, lowest)
_SORT_SCRIPT = (
    "t.querySelectorAll('th').forEach(function(th,c){th.style.cursor='pointer';"
    "th.onclick=function(){var b=t.tBodies[0],r=Array.from(b.rows),d=th.dataset.d==='1';"
    "r.sort(function(x,y){var u=+x.cells[c].textContent,v=+y.cells[c].textContent;"
    "return d?u-v:v-u;});th.dataset.d=d?'0':'1';r.forEach(function(x){b.appendChild(x);});};"
    "});"
)


def summarize(
    maps,
    causal: bool = False,
    period: int | None = None,
    offset: int = 0,
    **about,
) -> HeadSummary:
    """The :class:`HeadSummary` of ``maps`` (L, H, T, S) (a tensor or an array), the maps of one
    input, each row summing to 1 over its keys. ``causal``: causal self-attention (it sets the
    uniform entropy and the sign of the distance); ``period`` n and ``offset`` o: the input was
    ``[o tokens, x, x]`` with len(x) = n, and the induction score is measured. ``about``:
    :class:`HeadSummary`'s ``modules``, ``first`` and ``title``."""
    w = torch.as_tensor(np.asarray(maps) if not torch.is_tensor(maps) else maps)
    if w.dim() != 4 or 0 in w.shape:
        raise AttnkitError(f"head summary: maps must be (L, H, T, S), got shape {tuple(w.shape)}")
    w = w.detach().to("cpu", torch.float64)
    layers, heads, queries, keys = w.shape
    entropy = 0.0 - torch.special.xlogy(w, w).sum(-1).mean(-1)  # (L, H); 0 log 0 = 0, no -0
    seen = torch.arange(queries, dtype=torch.float64) + (keys - queries + 1)
    widest = seen.clamp(1, keys) if causal else torch.full((queries,), float(keys))
    square = queries == keys
    previous = profile = induction = None
    if square and queries > 1:
        previous = w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1).numpy()  # (L, H)
    if square:
        profile = _profile(w)
    if period is not None:
        if not square:
            raise AttnkitError("head summary: the induction score needs self-attention (T = S)")
        induction = _induction(w, period, offset)
    return HeadSummary(
        entropy=entropy.numpy(),
        entropy_max=float(widest.log().mean()),
        sink=w[..., 0].mean(-1).numpy(),
        previous=previous,
        induction=induction,
        profile=profile,
        tokens=queries,
        causal=causal,
        period=period,
        offset=offset,
        **about,
    )


def _profile(w: torch.Tensor) -> np.ndarray:
    """(L, H, T) the mean over rows of the weight at distance |i - j| of (L, H, T, T) maps."""
    layers, heads, size, _ = w.shape
    where = torch.arange(size)
    distance = (where[:, None] - where[None, :]).abs().flatten()  # (T * T,)
    total = torch.zeros(layers * heads, size, dtype=w.dtype)
    total.index_add_(1, distance, w.reshape(layers * heads, size * size))
    return (total / size).reshape(layers, heads, size).numpy()


def _induction(w: torch.Tensor, period: int, offset: int) -> np.ndarray:
    """(L, H) the mean weight from i in the second copy to i - n + 1 (see the module)."""
    size = w.shape[-1]
    if isinstance(period, bool) or not isinstance(period, int) or period < 2:
        raise AttnkitError(
            f"head summary: period must be a whole number at least 2, got {period!r}"
        )
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise AttnkitError(f"head summary: offset must be a whole number >= 0, got {offset!r}")
    if offset + 2 * period > size:
        raise AttnkitError(
            f"head summary: {offset} + 2 x {period} tokens do not fit in the maps' {size}"
        )
    rows = torch.arange(offset + period, offset + 2 * period)
    return w[..., rows, rows - period + 1].mean(-1).numpy()


def repeated_tokens(candidates, period: int, seed: int = 0) -> torch.Tensor:
    """(2n,) a random block of ``period`` = n ids drawn (with replacement) from ``candidates``
    (ids, e.g. a vocabulary's ordinary tokens) by a generator seeded with ``seed``, twice: the
    input of the induction score."""
    pool = torch.as_tensor(list(candidates), dtype=torch.long)
    if pool.numel() < 2:
        raise AttnkitError("repeated tokens: give at least 2 token ids to draw from")
    if isinstance(period, bool) or not isinstance(period, int) or period < 2:
        raise AttnkitError(f"period must be a whole number at least 2, got {period!r}")
    generator = torch.Generator().manual_seed(seed)
    block = pool[torch.randint(pool.numel(), (period,), generator=generator)]
    return torch.cat([block, block])
