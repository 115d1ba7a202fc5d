"""Forced decoding: the reference's attention and log-probability, as teacher forcing gives them."""

import pytest
import torch
from test_decoding import A, C, StubModel, _random_model, _stub_src

from attnkit.data.batching import Example, collate
from attnkit.data.vocab import EOS_ID
from attnkit.decoding import forced_decode, greedy_decode


@pytest.mark.parametrize("attention", ["bahdanau", "luong-general", "multihead"])
def test_forced_decoding_equals_the_teacher_forced_forward_pass(attention):
    model = _random_model(attention)
    torch.manual_seed(1)
    targets = [[4, 5, 6, 7], [8], [5, 5]]
    examples = [Example([4, 5, 6, 7, 8, EOS_ID], t, i) for i, t in enumerate(targets[:1])] + [
        Example([9, 10, EOS_ID], t, i + 1) for i, t in enumerate(targets[1:])
    ]
    batch = collate(examples)
    hyps = forced_decode(model, batch.src, batch.src_lengths, [targets[i] for i in batch.indices])
    with torch.no_grad():
        logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V), (B, T, S)
    logp = torch.log_softmax(logits, -1).gather(2, batch.tgt_out.clamp_min(0).unsqueeze(2))
    for row, hyp in enumerate(hyps):
        n = len(targets[batch.indices[row]]) + 1
        s = int(batch.src_lengths[row])
        assert hyp.tokens == targets[batch.indices[row]] and hyp.finished
        torch.testing.assert_close(hyp.weights, weights[row, :n, :s], atol=1e-5, rtol=1e-5)
        assert hyp.score == pytest.approx(float(logp[row, :n].sum()), abs=1e-4)


def test_forcing_the_greedy_output_gives_the_greedy_score_and_weights():
    model = StubModel()
    src, lengths = _stub_src()
    (greedy,) = greedy_decode(model, src, lengths, max_len=10)
    (forced,) = forced_decode(model, src, lengths, [greedy.tokens])
    assert forced.tokens == greedy.tokens == [A, C]
    assert forced.score == pytest.approx(greedy.score, abs=1e-6)
    torch.testing.assert_close(forced.weights, greedy.weights)


def test_forcing_a_path_greedy_would_not_take_scores_that_path():
    model = StubModel()
    src, lengths = _stub_src()
    (forced,) = forced_decode(model, src, lengths, [[5]])  # B </s>: 0.40 * 0.95
    assert forced.score == pytest.approx(torch.tensor(0.40 * 0.95).log().item(), abs=1e-5)


def test_one_target_per_source_is_required():
    model = _random_model()
    src, lengths = _stub_src()
    with pytest.raises(ValueError, match="2 targets for a batch of 1"):
        forced_decode(model, src, lengths, [[4], [5]])
