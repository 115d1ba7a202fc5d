"""Location-aware attention: content energies plus a convolution over the last alignment."""

from __future__ import annotations

import pytest
import torch

from attnkit.attention.location_aware import AlignmentAttention, first_alignment


def _inputs(b=2, s=7, dq=5, dk=6):
    g = torch.Generator().manual_seed(0)
    return torch.randn(b, dq, generator=g), torch.randn(b, s, dk, generator=g)


def test_weights_are_a_distribution_over_the_allowed_frames():
    torch.manual_seed(0)
    attention = AlignmentAttention(5, 6, 8, location=True, channels=3, kernel=3)
    query, keys = _inputs()
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    context, weights = attention(
        query, keys, attention.project_keys(keys), first_alignment(mask), mask
    )
    assert context.shape == (2, 6) and weights.shape == (2, 7)
    assert torch.allclose(weights.sum(-1), torch.ones(2))
    assert weights[1, 4:].abs().max() == 0
    assert torch.allclose(context, torch.einsum("bs,bsd->bd", weights, keys))


def test_the_previous_alignment_moves_location_aware_weights_and_not_content_ones():
    torch.manual_seed(0)
    query, keys = _inputs()
    at_start = first_alignment(torch.ones(2, 7, dtype=torch.bool))
    at_end = torch.zeros(2, 7)
    at_end[:, -1] = 1
    for location, moves in ((True, True), (False, False)):
        attention = AlignmentAttention(5, 6, 8, location=location, channels=3, kernel=3)
        projected = attention.project_keys(keys)
        _, first = attention(query, keys, projected, at_start)
        _, second = attention(query, keys, projected, at_end)
        assert (not torch.allclose(first, second)) == moves


def test_the_location_energy_is_the_convolution_by_hand():
    attention = AlignmentAttention(2, 2, 2, location=True, channels=1, kernel=3)
    with torch.no_grad():
        attention.query_proj.weight.zero_()
        attention.key_proj.weight.zero_()
        attention.key_proj.bias.zero_()
        attention.conv.weight.copy_(torch.tensor([[[1.0, 2.0, 3.0]]]))
        attention.location_proj.weight.copy_(torch.tensor([[1.0], [0.0]]))
        attention.v.copy_(torch.tensor([1.0, 0.0]))
    previous = torch.tensor([[0.0, 1.0, 0.0, 0.0]])
    keys = torch.zeros(1, 4, 2)
    energies = attention.energies(torch.zeros(1, 2), attention.project_keys(keys), previous)
    # conv (cross-correlation, padding 1) of [0, 1, 0, 0] with [1, 2, 3]: [3, 2, 1, 0]
    assert torch.allclose(energies, torch.tanh(torch.tensor([[3.0, 2.0, 1.0, 0.0]])))


def test_an_even_kernel_is_refused():
    with pytest.raises(ValueError, match="odd"):
        AlignmentAttention(2, 2, 2, kernel=4)
