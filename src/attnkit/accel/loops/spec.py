"""What a teacher-forcing loop computes (:class:`LoopSpec`) and what it runs on: the tensors of one
call (:class:`LoopInputs`) and the decoder's weights it uses (:class:`LoopWeights`).

``torch.autograd.Function.apply`` gives a gradient only to the tensors among its direct arguments,
so the loops' Functions take these dataclasses' tensors spread out (:meth:`LoopInputs.tensors`), an
absent one as an empty tensor because a Function returns one gradient per argument, and rebuild the
dataclasses inside (:func:`unpack`).

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from torch import Tensor


@dataclass(frozen=True, eq=False)
class LoopSpec:
    """What the loop computes, besides its tensors.

    lstm: LSTM gate arithmetic (else GRU); additive: ``v . tanh(q + P)`` scores
    (else ``scale * P q``). query_weight (A, H) and v (A,): the attention's parameters, as its
    ``loop_spec()`` gives them (:func:`attnkit.accel.loops.teacher_force` puts them into the
    :class:`LoopWeights`). attends_first: the decoder's form, as it declares it
    (``attends_before_step``): s_{t-1} queries the memory and c_t enters the RNN's input
    (:func:`~attnkit.accel.loops.run_bahdanau_loop`), else the new state h_t queries it and h~_t
    is fed to the next step (:func:`~attnkit.accel.loops.run_loop`).
    """

    lstm: bool
    additive: bool
    scale: float = 1.0
    query_weight: Tensor | None = None
    v: Tensor | None = None
    attends_first: bool = False

    @classmethod
    def of(cls, lstm: bool, score, attends_first: bool = False) -> LoopSpec:
        """From an attention's :class:`attnkit.attention.modules.ScoreSpec` and the decoder's
        form."""
        additive = score.kind == "additive"
        return cls(lstm, additive, score.scale, score.query_weight, score.v, attends_first)


class _Spreadable:
    """A frozen dataclass whose tensor fields (``TENSORS``, in field order) an autograd Function
    takes as separate arguments."""

    TENSORS: ClassVar[tuple[str, ...]]
    #: the fields that may be None; an empty tensor stands for them among the arguments
    OPTIONAL: ClassVar[tuple[str, ...]]

    def tensors(self) -> tuple[Tensor, ...]:
        """The tensor fields in order, an absent one as an empty tensor."""
        like = getattr(self, self.TENSORS[0])  # never None
        return tuple(
            like.new_empty(0) if (x := getattr(self, name)) is None else x for name in self.TENSORS
        )

    @classmethod
    def gradients(cls, **grads: Tensor | None) -> tuple[Tensor | None, ...]:
        """One gradient per tensor field, in order: those given by name, None for the rest."""
        unknown = grads.keys() - set(cls.TENSORS)
        if unknown:
            raise TypeError(f"{cls.__name__} has no tensor field {sorted(unknown)}")
        return tuple(grads.get(name) for name in cls.TENSORS)

    @classmethod
    def _from_tensors(cls, tensors: tuple[Tensor, ...], **rest):
        """The inverse of :meth:`tensors` (an empty tensor back to None in the optional fields)."""
        values = dict(zip(cls.TENSORS, tensors, strict=True))
        for name in cls.OPTIONAL:
            if values[name].numel() == 0:
                values[name] = None
        return cls(**values, **rest)


@dataclass(frozen=True, eq=False)
class LoopInputs(_Spreadable):
    """The tensors one loop runs on, every row sorted longest target first.

    x_proj (T, B, G*H): the embedding's part of the input gates, b_ih inside; h0, c0 (B, H) the
    initial state (c0 None for a GRU); keys (B, S, Dk) the values attended; projected (B, S, A) the
    keys as scored; mask (B, S) bool; keep (T, B, H) scaled dropout masks or None; active: per
    step, how many leading rows still have a target token (non-increasing).

    Each style reads one more: feed0 (B, H), h~_0, for the input-fed Luong loop; comb_x (T, B, H),
    the embedding's part of the output layer with its bias inside, for the Bahdanau loop.
    """

    x_proj: Tensor
    h0: Tensor
    c0: Tensor | None
    keys: Tensor
    projected: Tensor
    mask: Tensor
    keep: Tensor | None
    active: tuple[int, ...]
    feed0: Tensor | None = None
    comb_x: Tensor | None = None

    TENSORS: ClassVar = (
        "x_proj",
        "h0",
        "c0",
        "keys",
        "projected",
        "mask",
        "keep",
        "feed0",
        "comb_x",
    )
    OPTIONAL: ClassVar = ("c0", "keep", "feed0", "comb_x")

    def __post_init__(self):
        if any(a < b for a, b in zip(self.active, self.active[1:])):
            raise ValueError(f"active rows must not increase from step to step, got {self.active}")

    def reordered(self, order: Tensor) -> LoopInputs:
        """The same inputs with the batch rows in ``order`` (B,); active is left as it is."""

        def rows(x: Tensor | None) -> Tensor | None:  # (B, ...)
            return None if x is None else x[order]

        def steps_rows(x: Tensor | None) -> Tensor | None:  # (T, B, ...)
            return None if x is None else x[:, order]

        return replace(
            self,
            x_proj=steps_rows(self.x_proj),
            h0=rows(self.h0),
            c0=rows(self.c0),
            keys=rows(self.keys),
            projected=rows(self.projected),
            mask=rows(self.mask),
            keep=steps_rows(self.keep),
            feed0=rows(self.feed0),
            comb_x=steps_rows(self.comb_x),
        )

    def without_projections(self) -> LoopInputs:
        """A copy without the (T, B, ...) projections that no backward reads, x_proj empty and
        comb_x None: what a Function keeps for its backward (keeping them would hold their memory
        until then)."""
        return replace(self, x_proj=self.x_proj.new_empty(0), comb_x=None)

    @classmethod
    def from_tensors(cls, tensors: tuple[Tensor, ...], active: tuple[int, ...]) -> LoopInputs:
        return cls._from_tensors(tensors, active=active)


@dataclass(frozen=True, eq=False)
class LoopWeights(_Spreadable):
    """The decoder's weights one loop uses.

    w_ih_rest: the columns of W_ih past the embedding's, for what the loop feeds into its cell:
    h~_{t-1} (G*H, H) in the Luong loop, c_t (G*H, Dk) in the Bahdanau loop. w_hh (G*H, H), b_hh
    (G*H,). w_combine, b_combine: the combine layer; the Luong loop reads all of it, weight
    (H, Dk + H) over [c_t; h_t] and bias (H,); the Bahdanau loop only the weight's columns over
    [s_t; c_t], (H, H + Dk) (the rest and the bias are in ``LoopInputs.comb_x``; b_combine None).
    w_query (A, H) or None (the query is the state itself) and v (A,) for additive scores (else
    None): the attention's, from :class:`LoopSpec`.
    """

    w_ih_rest: Tensor
    w_hh: Tensor
    b_hh: Tensor
    w_query: Tensor | None
    v: Tensor | None
    w_combine: Tensor
    b_combine: Tensor | None = None

    TENSORS: ClassVar = ("w_ih_rest", "w_hh", "b_hh", "w_query", "v", "w_combine", "b_combine")
    OPTIONAL: ClassVar = ("w_query", "v", "b_combine")

    @classmethod
    def from_tensors(cls, tensors: tuple[Tensor, ...]) -> LoopWeights:
        return cls._from_tensors(tensors)


def spread(inputs: LoopInputs, weights: LoopWeights) -> tuple[Tensor, ...]:
    """The arguments a loop's autograd Function tracks: every tensor of both, in field order."""
    return (*inputs.tensors(), *weights.tensors())


def unpack(tensors: tuple[Tensor, ...], active: tuple[int, ...]) -> tuple[LoopInputs, LoopWeights]:
    """The inverse of :func:`spread`."""
    split = len(LoopInputs.TENSORS)
    inputs = LoopInputs.from_tensors(tensors[:split], active)
    return inputs, LoopWeights.from_tensors(tensors[split:])
