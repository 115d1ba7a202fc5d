"""Several trained seq2seq models decoding as one.

At every step each member reads its own encoding of the source with its own decoder state, and the
ensemble's output distribution is the mean of the members' probabilities:

    log p(y_t) = log( (1/M) sum_m p_m(y_t | y_<t, x) )

(probability averaging, as fairseq and OpenNMT ensemble). The attention shown for an output is the
mean of the weights of the members that attend (a member without attention, ``attention: none``,
has none to add); an ensemble of such members only has no attention (:attr:`has_attention`).
The members may differ in size, cell or attention type; they must share the vocabularies, which
the loading of an ensemble checks (``attnkit.load([dir1, dir2])``).

:class:`Ensemble` offers what the decoders in :mod:`attnkit.decoding` call (``encode`` and
``decoder.step``), so greedy decoding and beam search run an ensemble unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from attnkit.decoding.greedy import split_weights
from attnkit.models.seq2seq import Seq2Seq


class MemberStates(tuple):
    """One item per member (its memory or its decoder state); row selection applies to every
    member."""

    def index_select(self, index: Tensor) -> MemberStates:
        return MemberStates(item.index_select(index) for item in self)


class Ensemble(nn.Module):
    """Seq2seq models (M >= 1) decoding together; see the module docstring."""

    def __init__(self, members: Sequence[Seq2Seq]):
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one model")
        self.members = nn.ModuleList(members)
        self.decoder = _EnsembleDecoder(self.members)

    @property
    def has_attention(self) -> bool:
        """Whether any member attends (the weights of decoding mean something)."""
        return any(member.has_attention for member in self.members)

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[MemberStates, MemberStates]:
        """src (B, S) -> every member's attention memory and initial decoder state."""
        encoded = [member.encode(src, src_lengths) for member in self.members]
        return MemberStates(m for m, _ in encoded), MemberStates(s for _, s in encoded)


class _EnsembleDecoder:
    """The ``step`` of an ensemble (not a module: the members own every parameter)."""

    def __init__(self, members: nn.ModuleList):
        self.members = members

    def step(
        self, prev_tokens: Tensor, state: MemberStates, memory: MemberStates
    ) -> tuple[Tensor, MemberStates, Tensor]:
        """prev_tokens (B,) -> log of the mean probability (B, V), the new states, the mean
        weights of the attending members (B, S), or (B, L, H, S) when they are Transformers of
        one shape (zeros where none attends).

        The first output is already normalised log-probabilities; the decoders' ``log_softmax``
        leaves it as it is.
        """
        log_probs, states, weights = [], [], []
        for member, member_state, member_memory in zip(self.members, state, memory):
            logits, new_state, w = member.decoder.step(prev_tokens, member_state, member_memory)
            log_probs.append(torch.log_softmax(logits.float(), dim=-1))
            states.append(new_state)
            if member.has_attention:
                weights.append(w.float())
        if len({x.shape for x in weights}) > 1:  # RNN and Transformer members: their maps
            weights = [split_weights(x)[0] for x in weights]
        mean_weights = torch.stack(weights).mean(0) if weights else w.float()  # (B, [L, H,] S)
        if len(log_probs) == 1:
            return log_probs[0], MemberStates(states), mean_weights
        mean_log_prob = torch.logsumexp(torch.stack(log_probs), dim=0) - math.log(
            len(log_probs)
        )  # (B, V)
        return mean_log_prob, MemberStates(states), mean_weights
