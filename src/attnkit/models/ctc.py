"""A CTC recogniser: no attention at all, the contrast to Listen, Attend and Spell.

The listener of :mod:`attnkit.models.las` (a BiLSTM, then pyramidal BiLSTMs halving the
frames) reads the features; a linear layer scores, at every listener frame, each output or
the CTC *blank* (Graves et al. 2006). Training sums over every monotonic path of frame labels
that collapses (merge repeats, drop blanks) to the target (``torch.nn.CTCLoss``); decoding is
greedy: the best label per frame, collapsed. The frames are the alignment: no output ever
looks back, so the model cannot reorder (German ``siebenundneunzig`` -> ``97`` says the 9
after the 7), which is what it is here to show.

Shapes: B batch, T feature frames, F mel bands, S listener frames, V outputs (blank included),
U target length.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnkit.models.las import LASConfig, Listener


class CTC(nn.Module):
    """The listener and a per-frame classifier over ``vocab_size`` outputs; id ``blank`` is the
    CTC blank (a free id of the vocabulary, e.g. ``<s>``, which no target holds)."""

    def __init__(self, cfg: LASConfig, n_mels: int, vocab_size: int, blank: int):
        super().__init__()
        self.cfg, self.blank = cfg, blank
        self.listener = Listener(n_mels, cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(2 * cfg.listener_hidden, vocab_size)
        self.loss_fn = nn.CTCLoss(blank=blank, reduction="sum", zero_infinity=True)

    def forward(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """Features (B, T, F), lengths (B,) -> log probabilities (B, S, V) per listener frame,
        and the listener lengths (B,)."""
        frames, frame_lengths = self.listener(features, lengths)  # (B, S, 2H)
        return torch.log_softmax(self.out(self.dropout(frames)), -1), frame_lengths

    def loss(self, log_probs: Tensor, frame_lengths: Tensor, targets: Tensor) -> Tensor:
        """Mean CTC loss per target label: log_probs (B, S, V), targets (B, U) padded with
        negative ids (not counted). A target longer than its frames costs 0 (``zero_infinity``)
        rather than inf."""
        keep = targets >= 0
        target_lengths = keep.sum(1)
        flat = targets[keep]  # (sum U,) the concatenated targets
        total = self.loss_fn(
            log_probs.transpose(0, 1).float(), flat, frame_lengths.cpu(), target_lengths.cpu()
        )
        return total / max(int(target_lengths.sum()), 1)

    @torch.no_grad()
    def greedy(self, features: Tensor, lengths: Tensor) -> tuple[list[list[int]], Tensor]:
        """Best path decoding: per utterance the collapsed labels (repeats merged, blanks
        dropped), and the per-frame posteriors (B, S, V)."""
        log_probs, frame_lengths = self(features, lengths)
        best = log_probs.argmax(-1).tolist()  # (B, S)
        return [
            collapse(row[:n], self.blank) for row, n in zip(best, frame_lengths.tolist())
        ], log_probs.exp()


def collapse(labels: list[int], blank: int) -> list[int]:
    """A CTC path's labels: repeats merged, then blanks dropped (``a a - a b`` -> ``a a b``)."""
    out, last = [], None
    for label in labels:
        if label != last and label != blank:
            out.append(label)
        last = label
    return out
