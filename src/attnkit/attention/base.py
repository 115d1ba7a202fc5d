"""The protocol every attention module follows (:class:`Attention`) and what a module declares to
a fast loop (:class:`ScoreSpec`). The protocol itself is described in
:mod:`attnkit.attention.modules`, which holds the registry.

Shapes: B batch, T queries, S keys, Dq query width, Dk key width, A attention width, H heads.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from attnkit.attention.scores import attend, masked_softmax


@dataclass(frozen=True, eq=False)
class ScoreSpec:
    """The scores a module computes, for a loop that computes them itself.

    kind ``additive``: v . tanh(q W_q^T + P); ``dot``: scale * P (q W_q^T). q (B, H) is the
    query, P (B, S, A) ``project_keys(keys)``; query_weight W_q (A, H), or None where the
    query is used as it is; v (A,) for additive scores.
    """

    kind: str
    query_weight: Tensor | None = None
    v: Tensor | None = None
    scale: float = 1.0


@dataclass(frozen=True)
class AttentionOptions:
    """The settings only some attentions read (``model.window``, ``model.beta``,
    ``model.positions``): local-m/local-p's half window D, the cosine score's initial sharpening
    beta, and how many source positions luong-location scores."""

    window: int = 10
    beta: float = 5.0
    positions: int = 128


#: the methods that define what a module computes; a subclass redefining one of them without
#: its own loop_spec() gets None (a fast loop would compute its parent's function instead)
_SCORING = ("scores", "forward", "project_keys", "locate")


class Attention(nn.Module):
    """Base class: handles one-step queries and the mask shape, subclasses score."""

    #: whether the query is the previous decoder state s_{t-1} (Bahdanau) rather than h_t
    uses_previous_state = False
    #: whether the weights depend on where a key sits (its index s, the target step t), not only
    #: on what it holds: such a module does not permute with its source, and its one-step calls
    #: need the step (``position``) a decoder passes
    position_aware = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "loop_spec" not in vars(cls) and any(name in vars(cls) for name in _SCORING):
            cls.loop_spec = Attention.loop_spec

    def loop_spec(self) -> ScoreSpec | None:
        """What a fast loop may compute in this module's place; None (the default): nothing,
        the module is called."""
        return None

    def project_keys(self, keys: Tensor):
        """(B, S, Dk) -> precomputed key-side tensors; identity by default."""
        return keys

    def scores(self, query: Tensor, projected) -> Tensor:
        """(B, T, Dq) query -> (B, T, S) scores.  Subclasses implement."""
        raise NotImplementedError

    def context_from_weights(self, weights: Tensor, keys: Tensor, projected=None) -> Tensor:
        """The context this module makes of given weights (B, T, S) (or one step (B, S)) over the
        keys (B, S, Dk) and their ``projected`` form: what :meth:`forward` returns beside weights
        it computed itself. The faithfulness tests replace the weights through it."""
        if weights.dim() == 2:
            return attend(weights.unsqueeze(1), keys).squeeze(1)
        return attend(weights, keys)

    def locate(
        self, query: Tensor, scores: Tensor, allowed: Tensor | None, position: int
    ) -> tuple[Tensor, Tensor | None]:
        """Where the weights may go, for a position-aware module: scores (B, T, S) and the mask
        (B, 1, S) or None -> the scores and mask to normalise. ``position`` is the target step of
        the first query row (rows t = position, position + 1, ...). The default changes nothing.
        """
        return scores, allowed

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        projected=None,
        mask: Tensor | None = None,
        position: int = 0,
    ):
        """query (B, T, Dq) or one step (B, Dq), keys (B, S, Dk), mask (B, S) -> context (B, T, Dk)
        and weights (B, T, S) (or (B, Dk), (B, S)). ``position``: the target step of the (first)
        query, read only by :attr:`position_aware` modules."""
        one_step = query.dim() == 2
        if one_step:
            query = query.unsqueeze(1)  # (B, 1, Dq)
        if projected is None:
            projected = self.project_keys(keys)
        scores = self.scores(query, projected)  # (B, T, S)
        allowed = None if mask is None else mask.unsqueeze(1)  # (B, 1, S)
        scores, allowed = self.locate(query, scores, allowed, position)
        weights = masked_softmax(scores, allowed)
        context = attend(weights, keys)  # (B, T, Dk)
        if one_step:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights
