"""Where a speller listened: the spectrogram with the attention path over it, and the attention
of each output over time beneath (a pure function: arrays in, a matplotlib figure out). A model
with no attention (CTC) gives each output label's posterior at every frame in its place
(``weights="posterior"``).

The attention (U, S) is over the listener's frames, each ``stride`` feature frames wide; it is
drawn at feature-frame resolution, so the two panels share their time axis. Gold word spans,
when given, are shaded on both.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure


def plot_listening(
    features: np.ndarray,
    attention: np.ndarray,
    outputs: list[str],
    stride: int,
    path: str | Path | None = None,
    words: list[tuple[str, int, int]] | None = None,
    weights: str = "attention",
) -> Figure:
    """features (T, F) above, attention (U, S) upsampled to (U, T) below; each output's most
    attended frame marked on the spectrogram (the path, in output order). ``words``: (label,
    first frame, stop frame) shaded on both panels, their boundaries drawn and labelled.
    ``weights``: what the rows are ("attention", or "posterior" for CTC). Saved to ``path``
    (.png, .svg, .pdf) when given."""
    features, attention = np.asarray(features), np.asarray(attention, dtype=np.float64)
    if attention.ndim != 2 or len(outputs) != len(attention):
        raise ValueError(f"attention {attention.shape} needs one row per output ({len(outputs)})")
    frames = features.shape[0]
    wide = np.repeat(attention, stride, axis=1)[:, :frames]  # (U, <=T)
    wide = np.pad(wide, ((0, 0), (0, frames - wide.shape[1])))
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(1.2, 1))
    top.imshow(features.T, origin="lower", aspect="auto", cmap="magma")
    centres = (attention.argmax(axis=1) + 0.5) * stride
    top.plot(centres, np.full(len(centres), features.shape[1] * 0.9), "o-", color="#4dd0e1", ms=4)
    for label, x in zip(outputs, centres):
        top.annotate(
            label,
            (x, features.shape[1] * 0.9),
            xytext=(0, 6),
            color="white",
            textcoords="offset points",
            ha="center",
        )
    top.set_ylabel("mel band")
    top.set_title(
        "log-mel features and where each output listened"
        if weights == "attention"
        else "log-mel features and where each output label is most probable"
    )
    bottom.imshow(wide, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0)
    bottom.set_yticks(range(len(outputs)), outputs)
    bottom.set_xlabel("feature frame (10 ms)")
    bottom.set_title(
        "attention of each output" if weights == "attention" else "posterior of each output label"
    )
    for label, first, stop in words or ():
        for ax in (top, bottom):
            ax.axvspan(first - 0.5, stop - 0.5, color="white", alpha=0.12)
            for edge in (first - 0.5, stop - 0.5):
                ax.axvline(edge, color="white", lw=0.6, ls="--", alpha=0.7)
        top.annotate(label, ((first + stop) / 2 - 0.5, 1), color="white", fontsize=8, ha="center")
    if path is not None:
        fig.savefig(path)
    return fig
