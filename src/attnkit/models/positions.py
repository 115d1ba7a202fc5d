"""How the Transformer knows order: the positional encodings, by ``model.positional``.

Self-attention is permutation-equivariant: shuffle its inputs and its outputs shuffle alike.
Order enters as a vector added to each token's embedding, one per position p:

* ``sinusoidal`` (Vaswani et al. 2017, the default): sin(p / 10000^(2i/D)) in the even columns,
  cos in the odd ones. A function, no parameters: every position has one, however long the
  input, and PE_p . PE_(p+k) depends on the offset k alone.
* ``learned`` (Gehring et al. 2017; BERT, GPT): a trained table of ``model.max_positions`` rows
  (an ``nn.Embedding``). A position past the table has no vector: a longer sequence is a
  one-line error, and decoding stops at the table's end. Rows no training sequence reached stay
  as initialised.
* ``none``: nothing added; the encoder cannot tell order (its output for a permuted source is
  the permuted output), the decoder only what its causal mask implies.

Each is a module called with ``(start, length)`` that returns the (N, D) vectors of positions
``start .. start + N - 1`` (None for ``none``); ``limit`` is the number of positions it has
(None: any). Registered in :data:`POSITIONAL`; the state dict of ``sinusoidal`` and ``none``
holds nothing, so checkpoints written before the choice existed load unchanged.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnkit.errors import AttnkitError

#: rows of the sinusoid table kept ready (longer sequences compute theirs per call)
SINUSOID_ROWS = 512


def sinusoids(length: int, width: int) -> Tensor:
    """(length, width) positions: sin(p / 10000^(2i/D)) in even columns, cos in odd ones."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)  # (N, 1)
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: width // 2])
    return table


class SinusoidalPositions(nn.Module):
    """The fixed sinusoids; a table of :data:`SINUSOID_ROWS` rows, not saved (a function of the
    width), computed further for a longer sequence."""

    limit = None

    def __init__(self, width: int, max_positions: int):
        super().__init__()
        self.register_buffer("table", sinusoids(SINUSOID_ROWS, width), persistent=False)

    def forward(self, start: int, length: int) -> Tensor:
        """-> (N, D) the vectors of positions start .. start + N - 1."""
        end = start + length
        if end <= self.table.size(0):
            return self.table[start:end]
        return sinusoids(end, self.table.size(1)).to(self.table)[start:end]

    def reset_parameters(self) -> None:
        """Nothing to initialise."""


class LearnedPositions(nn.Module):
    """A trained (max_positions, D) table, one row per position."""

    def __init__(self, width: int, max_positions: int):
        super().__init__()
        self.table = nn.Embedding(max_positions, width)
        self.limit = max_positions
        self.reset_parameters()

    def forward(self, start: int, length: int) -> Tensor:
        """-> (N, D) rows start .. start + N - 1; AttnkitError past the table's end."""
        end = start + length
        if end > self.limit:
            raise AttnkitError(
                f"a sequence of {end} tokens (</s> or <s> included) is longer than this "
                f"Transformer's learned positions (model.max_positions: {self.limit}); "
                "shorten it, or train a model with a larger model.max_positions"
            )
        return self.table.weight[start:end]

    def reset_parameters(self) -> None:
        """Normal entries with the sinusoids' mean square (1/2): positions start as loud as the
        fixed encoding they replace."""
        nn.init.normal_(self.table.weight, std=math.sqrt(0.5))


class NoPositions(nn.Module):
    """No positional encoding: the embeddings alone."""

    limit = None

    def __init__(self, width: int, max_positions: int):
        super().__init__()

    def forward(self, start: int, length: int) -> None:
        return None

    def reset_parameters(self) -> None:
        """Nothing to initialise."""


#: ``model.positional`` -> its module class, built with (width D, model.max_positions)
POSITIONAL: dict[str, type[nn.Module]] = {
    "sinusoidal": SinusoidalPositions,
    "learned": LearnedPositions,
    "none": NoPositions,
}
