"""The model's top-k tokens at every output step."""

import math

import pytest
from test_prefix import SOURCES, small_translator

from attnkit.data.vocab import EOS
from attnkit.decoding.topk import top_k_steps


@pytest.fixture(scope="module")
def translator():
    return small_translator("luong-general")


def test_top_k_follows_greedy_decoding_step_by_step(translator):
    greedy = translator.translate(SOURCES)
    tops = top_k_steps(translator, greedy, 4)
    for g, steps in zip(greedy, tops):
        assert len(steps) == len(g.output_tokens)
        for token, options in zip(g.output_tokens, steps):
            assert len(options) == 4
            assert options[0][0] == token  # greedy takes the most likely token
            probs = [p for _, p in options]
            assert probs == sorted(probs, reverse=True)
            assert 0.0 < sum(probs) <= 1.0 + 1e-6
            assert not {"<pad>", "<s>"} & {tok for tok, _ in options}


def test_top_k_of_a_beam_output_holds_its_tokens_probabilities(translator):
    (t,) = translator.translate(["hello"], beam_size=3, n_best=3)
    tops = top_k_steps(translator, t.nbest, 20)  # more than the vocabulary: all of it
    for h, steps in zip(t.nbest, tops):
        logp = 0.0
        for token, options in zip(h.output_tokens, steps):
            assert len(options) == len(translator.tgt_vocab) - 2  # <pad> and <s> never
            logp += math.log(dict(options)[token])
        if h.output_tokens[-1] == EOS:
            assert logp == pytest.approx(h.score, abs=1e-4)


def test_a_blank_input_has_no_steps(translator):
    with pytest.warns(UserWarning, match="blank"):
        results = translator.translate(["", "abc"])
    tops = top_k_steps(translator, results, 2)
    assert tops[0] == [] and len(tops[1]) == len(results[1].output_tokens)


@pytest.mark.parametrize("k", [1, 3, 50])
def test_greedy_keeps_the_same_top_k_the_teacher_forced_pass_finds(translator, k):
    """Greedy decoding keeps each step's top k as it decodes (what the server sends); they are
    what a separate teacher-forced pass over its outputs gives."""
    kept = translator.translate(SOURCES, top_k=k)
    assert all(t.top is not None for t in kept)
    plain = translator.translate(SOURCES)
    assert all(t.top is None for t in plain)
    fast = top_k_steps(translator, kept, k)
    slow = top_k_steps(translator, plain, k)
    for a, b in zip(fast, slow):
        assert [[tok for tok, _ in step] for step in a] == [[tok for tok, _ in step] for step in b]
        for step_a, step_b in zip(a, b):
            assert [p for _, p in step_a] == pytest.approx([p for _, p in step_b], abs=1e-5)
    # asked for more than greedy kept: the pass runs
    assert len(top_k_steps(translator, translator.translate(SOURCES, top_k=1), 2)[0][0]) == 2


@pytest.mark.parametrize("k", [2, 50])
def test_beam_search_keeps_the_top_k_the_teacher_forced_pass_finds(translator, k):
    """Beam search keeps every step's top k of each output it returns (the server sends them
    with no second pass); they are what a teacher-forced pass over those outputs gives."""
    kept = translator.translate(SOURCES, beam_size=3, n_best=3, top_k=k)
    plain = translator.translate(SOURCES, beam_size=3, n_best=3)
    options = [h for t in kept for h in t.nbest]
    assert all(h.top is not None and len(h.top[0]) == len(h.output_tokens) for h in options)
    fast = top_k_steps(translator, options, k)
    slow = top_k_steps(translator, [h for t in plain for h in t.nbest], k)
    assert [h.output for h in options] == [h.output for t in plain for h in t.nbest]
    for a, b in zip(fast, slow):
        assert [[tok for tok, _ in step] for step in a] == [[tok for tok, _ in step] for step in b]
        for step_a, step_b in zip(a, b):
            assert [p for _, p in step_a] == pytest.approx([p for _, p in step_b], abs=1e-5)
