"""Decoding: batched greedy and beam search; both return tokens AND attention weights."""

from attnkit.decoding.beam import beam_search
from attnkit.decoding.greedy import Hypothesis, greedy_decode, max_output_length

__all__ = ["Hypothesis", "beam_search", "greedy_decode", "max_output_length"]
