"""Memory attention (attention/memory.py): the position encoding and masked addressing."""

from __future__ import annotations

import pytest
import torch

from attnkit.attention.memory import address, position_encoding, read


def test_position_encoding_is_the_papers_formula():
    # l_kj = (1 - j/J) - (k/d)(1 - 2j/J), by hand for J = 3 words, d = 2:
    # j=1: 2/3 - (k/2)(1/3); j=2: 1/3 + (k/2)(1/3); j=3: 0 + (k/2)
    expected = torch.tensor([[1 / 2, 1 / 3], [1 / 2, 2 / 3], [1 / 2, 1.0], [0.0, 0.0]])
    got = position_encoding(torch.tensor([3]), width=4, dim=2)[0]  # a 4th, padded word: 0
    assert torch.allclose(got, expected)


def test_the_centred_position_encoding_is_the_reference_codes_formula():
    # l_kj = 1 + 4 (k - (d+1)/2)(j - (J+1)/2) / (dJ), by hand for J = 3, d = 2:
    # k - 3/2 = -1/2, +1/2; j - 2 = -1, 0, 1; 4 / (dJ) = 2/3
    expected = torch.tensor([[4 / 3, 2 / 3], [1.0, 1.0], [2 / 3, 4 / 3], [0.0, 0.0]])
    got = position_encoding(torch.tensor([3]), width=4, dim=2, centred=True)[0]
    assert torch.allclose(got, expected)
    paper = position_encoding(torch.tensor([3]), width=4, dim=2)[0]
    # a word's weights average 1 where the paper's average about 1/2
    assert torch.allclose(got[:3].mean(-1), torch.ones(3)) and paper[:3].mean() < 0.7


def test_position_encoding_uses_each_sentences_own_length():
    enc = position_encoding(torch.tensor([[1, 2]]), width=2, dim=2)  # (1, 2, L, D)
    # J = 1: l_k1 = 0 - (k/2)(1 - 2) = k/2
    assert torch.allclose(enc[0, 0], torch.tensor([[0.5, 1.0], [0.0, 0.0]]))
    # J = 2: j=1: 1/2 - (k/2)(0) = 1/2; j=2: 0 + k/2
    assert torch.allclose(enc[0, 1], torch.tensor([[0.5, 0.5], [0.5, 1.0]]))


def test_addressing_never_attends_an_empty_memory():
    torch.manual_seed(0)
    query, keys = torch.randn(2, 4), torch.randn(2, 5, 4)
    mask = torch.tensor([[True, True, True, False, False], [True] * 5])
    p = address(query, keys, mask)
    assert torch.all(p[0, 3:] == 0)
    assert torch.allclose(p.sum(-1), torch.ones(2))
    keys[0, 3:] = 1e6  # whatever an empty memory holds changes nothing
    assert torch.equal(address(query, keys, mask)[0], p[0])
    linear = address(query, keys, mask, linear=True)  # linear start: the scores, masked
    assert torch.allclose(linear[1], keys[1] @ query[1]) and torch.all(linear[0, 3:] == 0)


def test_read_weighs_the_values():
    values = torch.arange(6.0).view(1, 3, 2)
    out = read(torch.tensor([[0.5, 0.5, 0.0]]), values)
    assert torch.equal(out, torch.tensor([[1.0, 2.0]]))


@pytest.mark.parametrize("method", ["gradient", "input_x_gradient", "integrated_gradients"])
def test_saliency_over_memories_sums_to_one_and_skips_empty_ones(method):
    from attnkit.explain.memory import memory_saliency
    from attnkit.models.memn2n import MemN2N, MemN2NConfig

    torch.manual_seed(0)
    model = MemN2N(MemN2NConfig(dim=8), vocab=12, memory_size=5).eval()
    stories = torch.randint(1, 12, (2, 5, 3))
    counts = torch.tensor([2, 5])
    stories[0, 2:] = 0
    saliency, answers = memory_saliency(
        model, stories, counts, torch.randint(1, 12, (2, 3)), method
    )
    assert saliency.shape == (2, 5) and torch.all(saliency[0, 2:] == 0)
    assert torch.allclose(saliency.sum(-1), torch.ones(2)) and answers.shape == (2,)


def test_argmax_agreement_counts_a_match_at_any_hop():
    from attnkit.explain.memory import argmax_agreement

    attention = torch.tensor([[[0.9, 0.1], [0.2, 0.8]], [[0.9, 0.1], [0.7, 0.3]]])  # (B, K, M)
    saliency = torch.tensor([[0.3, 0.7], [0.4, 0.6]])  # the first matches hop 2; the second none
    assert argmax_agreement(attention, saliency) == 0.5
