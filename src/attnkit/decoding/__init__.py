"""Decoding: batched greedy and beam search; both return tokens AND attention weights."""

from attnkit.decoding.beam import beam_search
from attnkit.decoding.forced import forced_decode
from attnkit.decoding.greedy import (
    Hypothesis,
    greedy_decode,
    max_output_length,
    target_position_limit,
)

__all__ = [
    "Hypothesis",
    "beam_search",
    "forced_decode",
    "greedy_decode",
    "max_output_length",
    "target_position_limit",
]
