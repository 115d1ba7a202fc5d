"""Pointer network (Vinyals, Fortunato & Jaitly 2015): an encoder-decoder whose output
distribution *is* its attention over the inputs.

Encoder: each input (n, d) is embedded by a linear layer and read by an LSTM; a learned vector
takes slot 0 of the memory, the *end* slot, so the decoder can point at "stop" like at any input.
Decoder: an LSTM steps on the embedding of the input chosen last (a learned start vector first);
its state d_i scores every slot with Bahdanau's additive score u_j = v^T tanh(W_1 e_j + W_2 d_i)
(:func:`attnkit.attention.scores.additive_scores`), and the masked softmax of u over the slots
is p(C_i | C_1..C_{i-1}, P): the prediction and the attention in one.

The mask (:func:`allowed_slots`) forbids what the task cannot output: an input already chosen;
for a permutation (sort, TSP) the end slot until every input is chosen, and then everything
else; for a hull, the end slot before three points. Teacher forcing feeds the reference choices.

Shapes: B batch, n inputs, S = n + 1 slots (end + inputs), T output steps, d coordinates,
H hidden width, A attention width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.attention.scores import additive_scores, masked_softmax
from attnkit.errors import ConfigError

END = 0  # the slot that ends an output; slot i + 1 is input i


@dataclass
class PointerConfig:
    """The ``model:`` section of a pointer experiment."""

    hidden: int = 128  # LSTM width of encoder and decoder
    attention_dim: int = 128  # width A of the additive pointer score
    encoder_layers: int = 1  # stacked encoder LSTM layers
    bidirectional: bool = False  # the encoder reads the inputs both ways (states H wide still)

    def validate(self, where: str) -> None:
        for name in ("hidden", "attention_dim", "encoder_layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be at least 1, got {getattr(self, name)}")
        if self.bidirectional and self.hidden % 2:
            raise ConfigError(f"{where}.hidden: must be even with bidirectional, got {self.hidden}")


def allowed_slots(chosen: Tensor, steps_done: int, permutation: bool, min_points: int) -> Tensor:
    """Where the next pointer may go: chosen (B, S) bool (slot 0 unused) -> allowed (B, S).

    An input chosen once is never chosen again. ``permutation``: the end slot only once every
    input is chosen, and then nothing else. Otherwise the end slot only after ``min_points``
    choices. A row that has ended keeps the end slot allowed (its steps are padding).
    """
    inputs_free = ~chosen[:, 1:]  # (B, n)
    if permutation:
        end = ~inputs_free.any(1, keepdim=True)
    else:
        end = torch.full_like(inputs_free[:, :1], steps_done >= min_points)
        end = end | ~inputs_free.any(1, keepdim=True)
    return torch.cat([end, inputs_free], 1)


@dataclass
class PointerState:
    """The decoder's state between steps: LSTM (h, c) each (B, H), the slots chosen (B, S), the
    steps taken, and whether each row has pointed at the end (B,)."""

    h: Tensor
    c: Tensor
    chosen: Tensor
    steps: int
    ended: Tensor

    def index_select(self, index: Tensor) -> PointerState:
        """Rows in ``index`` order (beam search)."""
        pick = lambda x: x.index_select(0, index)  # noqa: E731
        return PointerState(
            pick(self.h), pick(self.c), pick(self.chosen), self.steps, pick(self.ended)
        )


@dataclass
class PointerMemory:
    """The encoder's slots (B, S, H) and their projection W_1 e_j (B, S, A), once per batch."""

    slots: Tensor
    projected: Tensor

    def index_select(self, index: Tensor) -> PointerMemory:
        return PointerMemory(
            self.slots.index_select(0, index), self.projected.index_select(0, index)
        )


class PointerNet(nn.Module):
    """See the module docstring. ``forward`` is teacher-forced; decoding steps with
    :meth:`start` and :meth:`step` (:mod:`attnkit.decoding.pointer`)."""

    def __init__(self, cfg: PointerConfig, dims: int, permutation: bool, min_points: int = 3):
        super().__init__()
        self.cfg, self.dims = cfg, dims
        self.permutation, self.min_points = permutation, min_points
        h = cfg.hidden
        self.embed = nn.Linear(dims, h)
        directions = 2 if cfg.bidirectional else 1
        self.encoder = nn.LSTM(
            h,
            h // directions,
            cfg.encoder_layers,
            batch_first=True,
            bidirectional=cfg.bidirectional,
        )
        self.end_slot = nn.Parameter(torch.empty(h).uniform_(-0.1, 0.1))
        self.go = nn.Parameter(torch.empty(h).uniform_(-0.1, 0.1))  # the first decoder input
        self.decoder = nn.LSTMCell(h, h)
        self.key_proj = nn.Linear(h, cfg.attention_dim, bias=False)  # W_1
        self.query_proj = nn.Linear(h, cfg.attention_dim, bias=False)  # W_2
        self.v = nn.Parameter(torch.empty(cfg.attention_dim).uniform_(-0.1, 0.1))

    def encode(self, inputs: Tensor) -> tuple[PointerMemory, PointerState, Tensor]:
        """inputs (B, n, d) -> the memory, the first state and the embedded slots (B, S, H)."""
        b, n, _ = inputs.shape
        emb = self.embed(inputs)  # (B, n, H)
        states, (h, c) = self.encoder(emb)  # (B, n, H)
        end = self.end_slot.expand(b, 1, -1)
        slots = torch.cat([end, states], 1)  # (B, S, H)
        embedded = torch.cat([self.go.expand(b, 1, -1), emb], 1)  # slot 0 feeds the go vector
        if self.cfg.bidirectional:  # (layers * 2, B, H/2): the last layer's two directions
            h, c = (torch.cat([x[-2], x[-1]], -1) for x in (h, c))
        else:
            h, c = h[-1], c[-1]
        chosen = torch.zeros(b, n + 1, dtype=torch.bool, device=inputs.device)
        ended = torch.zeros(b, dtype=torch.bool, device=inputs.device)
        memory = PointerMemory(slots, self.key_proj(slots))
        return memory, PointerState(h, c, chosen, 0, ended), embedded

    def step(
        self, prev_input: Tensor, state: PointerState, memory: PointerMemory
    ) -> tuple[Tensor, PointerState]:
        """prev_input (B, H): the embedding of the input chosen last (or the go vector) ->
        log-probabilities over the slots (B, S), masked, and the state before the choice."""
        h, c = self.decoder(prev_input, (state.h, state.c))
        scores = additive_scores(self.query_proj(h).unsqueeze(1), memory.projected, self.v)
        allowed = allowed_slots(state.chosen, state.steps, self.permutation, self.min_points)
        allowed = allowed | state.ended[:, None]  # an ended row: anything, its steps are padding
        weights = masked_softmax(scores.squeeze(1), allowed)  # (B, S)
        log_probs = torch.log(weights.clamp_min(1e-30)).masked_fill(~allowed, float("-inf"))
        return log_probs, PointerState(h, c, state.chosen, state.steps, state.ended)

    @staticmethod
    def choose(state: PointerState, slots: Tensor) -> PointerState:
        """The state after pointing at ``slots`` (B,)."""
        chosen = state.chosen.clone()
        live = ~state.ended
        chosen[live, slots[live]] = True
        chosen[:, END] = False
        ended = state.ended | (slots == END)
        return PointerState(state.h, state.c, chosen, state.steps + 1, ended)

    def forward(self, inputs: Tensor, targets: Tensor) -> Tensor:
        """Teacher forcing: inputs (B, n, d), targets (B, T) slots (-1: padding after the end)
        -> log-probabilities (B, T, S), the attention of every step."""
        memory, state, embedded = self.encode(inputs)
        rows = torch.arange(inputs.size(0), device=inputs.device)
        prev = embedded[:, 0]  # the go vector
        out = []
        for t in range(targets.size(1)):
            log_probs, state = self.step(prev, state, memory)
            out.append(log_probs)
            slot = targets[:, t].clamp_min(0)  # padding: point at the end (already ended)
            state = self.choose(state, slot)
            prev = embedded[rows, slot]
        return torch.stack(out, 1)
