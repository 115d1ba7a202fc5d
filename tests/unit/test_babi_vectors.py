"""bAbI questions as tensors: vocabulary, padding, supporting marks, random noise."""

from __future__ import annotations

import pytest
import torch

from attnkit.data.babi import parse_stories
from attnkit.data.babi_vectors import PAD, BabiVocab, add_noise
from attnkit.errors import CheckpointError

TEXT = (
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the kitchen.\n"
    "5 Where is Daniel? \tkitchen\t4\n"
)


def test_encode_pads_and_marks_the_supporting_facts():
    qs = parse_stories(TEXT)
    vocab = BabiVocab.build(qs, memory_size=4)
    assert vocab.tokens[0] == PAD and vocab.sentence_words == 6 and vocab.query_words == 3
    b = vocab.encode(qs)
    assert b.stories.shape == (2, 4, 6) and b.queries.shape == (2, 3)
    assert b.counts.tolist() == [2, 3]
    words = [vocab.tokens[i] for i in b.stories[1, 2].tolist()]
    assert words == ["daniel", "went", "back", "to", "the", "kitchen"]
    assert b.stories[0, 0, 5] == 0  # a shorter memory is padded with the empty word
    assert b.stories[0, 2:].eq(0).all()  # memories past the count are empty
    assert b.supporting.nonzero().tolist() == [[0, 0], [1, 2]]
    assert [vocab.tokens[i] for i in b.answers.tolist()] == ["bathroom", "kitchen"]


def test_unknown_words_read_as_the_empty_word():
    vocab = BabiVocab.build(parse_stories(TEXT), memory_size=4)
    ids, unknown = vocab.word_ids("Where is Zed", 4)
    assert ids[2:] == [0, 0] and ids[0] == vocab.ids["where"] and unknown == ["zed"]


def test_a_memory_longer_than_the_memory_keeps_its_latest_facts():
    qs = parse_stories(TEXT)
    vocab = BabiVocab.build(qs, memory_size=2)
    b = vocab.encode(qs[1:])
    assert b.counts.tolist() == [2]
    assert vocab.tokens[int(b.stories[0, 1, 0])] == "daniel"
    assert b.supporting[0].tolist() == [False, True]


def test_noise_inserts_empty_memories_and_keeps_the_facts_in_order():
    qs = parse_stories("".join(f"{i} Fact {i}.\n" for i in range(1, 11)) + "11 Q? \ta\t3\n")
    vocab = BabiVocab.build(qs, memory_size=20)
    b = vocab.encode(qs * 8)
    noisy = add_noise(b, 0.3, torch.Generator().manual_seed(0))
    assert noisy.counts.tolist() == [13] * 8  # 10 facts + round(0.3 * 10) empty ones
    for row in range(8):
        kept = noisy.stories[row][noisy.stories[row].ne(0).any(-1)]
        assert torch.equal(kept, b.stories[row, :10])  # every fact, in order
        (mark,) = noisy.supporting[row].nonzero().flatten().tolist()
        assert torch.equal(noisy.stories[row, mark], b.stories[row, 2])  # moved with its fact
    assert len({tuple(r.ne(0).any(-1).tolist()) for r in noisy.stories}) > 1  # random places
    assert add_noise(b, 0.0, torch.Generator()) is b


def test_a_saved_vocabulary_is_checked_on_load():
    vocab = BabiVocab.build(parse_stories(TEXT), memory_size=4)
    assert BabiVocab.from_json(vocab.to_json(), "v.json").tokens == vocab.tokens
    bad = {**vocab.to_json(), "tokens": ["mary", "mary"]}
    with pytest.raises(CheckpointError, match="v.json: tokens"):
        BabiVocab.from_json(bad, "v.json")
    with pytest.raises(CheckpointError, match="memory_size"):
        BabiVocab.from_json({**vocab.to_json(), "memory_size": 0}, "v.json")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_noise_on_the_gpu_draws_what_it_draws_on_the_cpu():
    qs = parse_stories("".join(f"{i} Fact {i}.\n" for i in range(1, 11)) + "11 Q? \ta\t3\n")
    b = BabiVocab.build(qs, memory_size=20).encode(qs * 4)
    on_gpu = type(b)(*(t.cuda() for t in (b.stories, b.counts, b.queries, b.answers, b.supporting)))
    cpu = add_noise(b, 0.3, torch.Generator().manual_seed(1))
    gpu = add_noise(on_gpu, 0.3, torch.Generator().manual_seed(1))
    assert gpu.stories.is_cuda and torch.equal(gpu.stories.cpu(), cpu.stories)
    assert torch.equal(gpu.supporting.cpu(), cpu.supporting)
