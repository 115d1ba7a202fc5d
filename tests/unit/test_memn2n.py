"""The memory network: shapes, masking of empty memories, the ways hops share weights."""

from __future__ import annotations

import pytest
import torch

from attnkit.errors import ConfigError
from attnkit.models.memn2n import MEMORIES, MemN2N, MemN2NConfig, _ages, words_of


def _batch(b=3, m=6, length=4, vocab=12):
    g = torch.Generator().manual_seed(0)
    stories = torch.randint(1, vocab, (b, m, length), generator=g)
    counts = torch.tensor([2, 6, 4])[:b]
    stories[torch.arange(m)[None, :] >= counts[:, None]] = 0  # empty past the count
    queries = torch.randint(1, vocab, (b, 3), generator=g)
    return stories, counts, queries


@pytest.mark.parametrize("memory", list(MEMORIES))
@pytest.mark.parametrize("encoding", ["position", "position_centred", "bow"])
def test_every_variant_answers_with_attention_over_its_memories(memory, encoding):
    torch.manual_seed(0)
    cfg = MemN2NConfig(hops=3, dim=8, memory=memory, encoding=encoding)
    model = MemN2N(cfg, vocab=12, memory_size=6)
    stories, counts, queries = _batch()
    out = model(stories, counts, queries)
    assert out.logits.shape == (3, 12) and out.attention.shape == (3, 3, 6)
    assert torch.allclose(out.attention.sum(-1), torch.ones(3, 3))
    assert torch.all(out.attention[0, :, 2:] == 0)  # question 0 has 2 memories
    # words in the empty slots change nothing: they are masked, not read
    noisy = stories.clone()
    noisy[0, 2:] = 5
    again = model(noisy, counts, queries)
    assert torch.allclose(again.logits, out.logits) and torch.equal(again.attention, out.attention)


def test_linear_start_leaves_the_softmax_out():
    torch.manual_seed(0)
    model = MemN2N(MemN2NConfig(dim=8), vocab=12, memory_size=6)
    stories, counts, queries = _batch()
    model.linear.fill_(True)
    p = model(stories, counts, queries).attention
    assert not torch.allclose(p.sum(-1), torch.ones(3, 3))
    assert "linear" in model.state_dict()  # saved with the weights


def test_adjacent_tying_shares_one_embedding_between_neighbouring_hops():
    cfg = MemN2NConfig(hops=3, dim=8, temporal=False)
    adjacent = MemN2N(cfg, vocab=12, memory_size=6)
    layerwise = MemN2N(MemN2NConfig(hops=3, dim=8, temporal=False, memory="layerwise"), 12, 6)
    assert len(adjacent.weights.embed) == 4  # A1=B, C1=A2, C2=A3, C3=W^T
    n_adjacent = sum(p.numel() for p in adjacent.parameters())
    n_layerwise = sum(p.numel() for p in layerwise.parameters())
    assert n_adjacent == 4 * 12 * 8
    assert n_layerwise == 3 * 12 * 8 + 8 * 8 + 12 * 8  # A, B, C, H, W
    # the last embedding is the answer matrix: changing it changes the answer's scores
    stories, counts, queries = _batch()
    before = adjacent(stories, counts, queries).logits
    with torch.no_grad():
        adjacent.weights.embed[3].weight[1:, 0] += 1.0
    assert not torch.allclose(adjacent(stories, counts, queries).logits, before)


def test_temporal_encoding_tells_memories_apart_by_age():
    torch.manual_seed(0)
    model = MemN2N(MemN2NConfig(dim=8, encoding="bow"), vocab=12, memory_size=6)
    stories = torch.zeros(1, 6, 2, dtype=torch.long)
    stories[0, :3] = torch.tensor([4, 5])  # the same sentence three times
    p = model(stories, torch.tensor([3]), torch.tensor([[4, 0]])).attention
    assert not torch.allclose(p[0, 0, 0], p[0, 0, 1])  # told apart only by their age
    flat = MemN2N(MemN2NConfig(dim=8, encoding="bow", temporal=False), vocab=12, memory_size=6)
    q = flat(stories, torch.tensor([3]), torch.tensor([[4, 0]])).attention
    assert torch.allclose(q[0, 0, :3], torch.full((3,), 1 / 3))


def test_config_refuses_bad_values():
    with pytest.raises(ConfigError, match="hops"):
        MemN2NConfig(hops=0).validate("model")
    with pytest.raises(ConfigError, match="noise"):
        MemN2NConfig(noise=2.0).validate("model")


def test_zero_empty_slots_take_weight_as_zero_vectors():
    torch.manual_seed(0)
    cfg = MemN2NConfig(hops=2, dim=8, empty_slots="zero")
    model = MemN2N(cfg, vocab=12, memory_size=6)
    stories, counts, queries = _batch()
    out = model(stories, counts, queries)
    assert torch.allclose(out.attention.sum(-1), torch.ones(3, 2))  # over all 6 slots
    assert torch.all(out.attention[0, :, 2:] > 0)  # question 0's 4 empty slots take weight
    # an empty slot scores exactly 0 at the first hop: its weight is exp(0) / the sum
    u = model.weights.query(words_of(queries, "position", 8))
    keys = model.weights.memories(words_of(stories, "position", 8), _ages(counts, 6))[0][0]
    scores = torch.einsum("bd,bmd->bm", u, keys)[0, :2]
    expected = 1 / (torch.exp(scores).sum() + 4)
    assert torch.allclose(out.attention[0, 0, 2:], expected.expand(4))
    # what a slot past the count holds changes nothing: it is read as nothing
    noisy = stories.clone()
    noisy[0, 2:] = 5
    assert torch.allclose(model(noisy, counts, queries).logits, out.logits)
    # a slot inside the count with no words (random noise's) is read as nothing too
    gap = stories.clone()
    gap[2, 1] = 0  # question 2 holds 4 facts: slot 1 emptied, slots 4 and 5 past its count
    weights = model(gap, counts, queries).attention[2, 0]
    assert torch.allclose(weights[1], weights[4]) and torch.allclose(weights[4], weights[5])
    with pytest.raises(ConfigError, match="empty_slots"):
        from attnkit.config import from_dict

        from_dict(MemN2NConfig, {"empty_slots": "sink"}, "model")
