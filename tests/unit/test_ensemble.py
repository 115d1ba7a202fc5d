"""Ensembles: one member decodes as the model alone; several decode with the mean of their
probabilities, and every hypothesis' score re-scores exactly under teacher forcing; checkpoints that
cannot be combined are clear errors."""

import math

import pytest
import torch
from test_decoding import _random_model, _src
from test_translator import _translator

from attnkit.data.vocab import BOS_ID, EOS_ID
from attnkit.decoding import beam_search, greedy_decode
from attnkit.decoding.ensemble import Ensemble
from attnkit.errors import AttnkitError, CheckpointError


def _members():
    """Two members that differ in cell, attention and decoder style."""
    return [
        _random_model("bahdanau", "gru", seed=0, sharpen=2.0),
        _random_model("luong-general", "lstm", seed=7, sharpen=2.0),
    ]


def _ensemble_rescore(members, src, lengths, i, hyp):
    """Teacher-forced sum over steps of log((1/M) sum_m p_m(token)), and the members' mean attention
    rows."""
    out = hyp.tokens + ([EOS_ID] if hyp.finished else [])
    tgt_in = torch.tensor([[BOS_ID] + out[:-1]])
    n = int(lengths[i])
    log_probs, weights = [], []
    with torch.no_grad():
        for model in members:
            logits, w = model(src[i : i + 1, :n], lengths[i : i + 1], tgt_in)
            log_probs.append(torch.log_softmax(logits.double(), -1)[0])
            weights.append(w[0])
    mean_p = torch.stack(log_probs).exp().mean(0)  # (T, V)
    score = float(mean_p[torch.arange(len(out)), torch.tensor(out)].log().sum())
    return score, torch.stack(weights).mean(0)


def test_one_member_decodes_as_the_model_alone():
    model = _random_model("luong-concat", "lstm", seed=3)
    ensemble = Ensemble([model]).eval()
    src, lengths = _src()
    for alone, together in zip(
        greedy_decode(model, src, lengths, 12), greedy_decode(ensemble, src, lengths, 12)
    ):
        assert together.tokens == alone.tokens and together.finished == alone.finished
        assert together.score == pytest.approx(alone.score, abs=1e-5)
        torch.testing.assert_close(together.weights, alone.weights)
    for alone, together in zip(
        beam_search(model, src, lengths, 12, beam_size=4, n_best=4),
        beam_search(ensemble, src, lengths, 12, beam_size=4, n_best=4),
    ):
        assert [h.tokens for h in together] == [h.tokens for h in alone]
        assert [h.score for h in together] == pytest.approx([h.score for h in alone], abs=1e-5)


def test_step_is_the_log_of_the_mean_probability_and_the_mean_weights():
    members = _members()
    ensemble = Ensemble(members).eval()
    src, lengths = _src()
    prev = torch.tensor([BOS_ID] * 4)
    with torch.no_grad():
        memory, state = ensemble.encode(src, lengths)
        log_p, new_state, weights = ensemble.decoder.step(prev, state, memory)
        expected_p = torch.zeros_like(log_p)
        expected_w = torch.zeros_like(weights)
        for m, member in enumerate(members):
            member_memory, member_state = member.encode(src, lengths)
            logits, member_new, w = member.decoder.step(prev, member_state, member_memory)
            expected_p += torch.softmax(logits, -1) / 2
            expected_w += w / 2
            torch.testing.assert_close(
                new_state[m].rnn, member_new.rnn
            )  # each member keeps its own state
    torch.testing.assert_close(log_p, expected_p.log(), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(4))
    torch.testing.assert_close(weights, expected_w)
    assert not torch.allclose(
        log_p, torch.log_softmax(member.decoder.step(prev, member_state, member_memory)[0], -1)
    )


def test_row_selection_applies_to_every_member():
    ensemble = Ensemble(_members()).eval()
    src, lengths = _src()
    with torch.no_grad():
        memory, state = ensemble.encode(src, lengths)
    rows = torch.tensor([2, 0, 0])
    picked_memory, picked_state = memory.index_select(rows), state.index_select(rows)
    for m in range(2):
        torch.testing.assert_close(picked_memory[m].states, memory[m].states[rows])
    torch.testing.assert_close(picked_state[0].rnn, state[0].rnn[:, rows])  # GRU (L, B, H)
    torch.testing.assert_close(picked_state[1].rnn[1], state[1].rnn[1][:, rows])  # LSTM cell state


def test_greedy_and_beam_scores_rescore_under_the_ensemble():
    members = _members()
    ensemble = Ensemble(members).eval()
    src, lengths = _src()
    for i, hyp in enumerate(greedy_decode(ensemble, src, lengths, max_len=12)):
        score, weights = _ensemble_rescore(members, src, lengths, i, hyp)
        assert hyp.score == pytest.approx(score, abs=1e-4)
        torch.testing.assert_close(hyp.weights, weights, atol=1e-5, rtol=1e-5)
    finished = 0
    for i, hyps in enumerate(
        beam_search(ensemble, src, lengths, max_len=12, beam_size=4, alpha=0.0, n_best=4)
    ):
        for hyp in hyps:
            score, weights = _ensemble_rescore(members, src, lengths, i, hyp)
            assert hyp.score == pytest.approx(score, abs=1e-4), (i, hyp.tokens)
            torch.testing.assert_close(hyp.weights, weights, atol=1e-5, rtol=1e-5)
            finished += hyp.finished
        assert hyps[0].score >= max(h.score for h in hyps) - 1e-6  # alpha 0: ranked by score alone
    assert finished > 0


def test_ensemble_of_two_differs_from_either_member():
    members = _members()
    src, lengths = _src()
    together = [h.score for h in greedy_decode(Ensemble(members).eval(), src, lengths, 12)]
    for member in members:
        alone = [h.score for h in greedy_decode(member, src, lengths, 12)]
        assert not all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(alone, together))


def test_empty_ensemble_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        Ensemble([])


def test_load_ensemble_decodes_and_checks_vocabularies(tmp_path):
    first, second = _translator(), _translator()
    with torch.no_grad():
        for p in second.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    first.save(tmp_path / "a")
    second.save(tmp_path / "b")
    from attnkit.families.seq2seq.ensemble import load_ensemble

    ensemble = load_ensemble([tmp_path / "a", tmp_path / "b"], "cpu")
    assert isinstance(ensemble.model, Ensemble) and len(ensemble.model.members) == 2
    out = ensemble.translate(["abc", "hello"], beam_size=2)
    assert [t.weights.shape[1] for t in out] == [4, 6]  # the true source tokens, </s> included
    alone = load_ensemble([tmp_path / "a"], "cpu").translate(["abc", "hello"])
    assert [t.output for t in alone] == [t.output for t in first.translate(["abc", "hello"])]

    with pytest.raises(AttnkitError, match="members' directories"):
        ensemble.save(tmp_path / "ensemble")
    assert not (tmp_path / "ensemble").exists()

    # a checkpoint with another target vocabulary cannot join
    third = _translator()
    third.tgt_vocab = type(third.tgt_vocab)(third.tgt_vocab.itos[:-1] + ["#"])
    third.save(tmp_path / "c")
    with pytest.raises(CheckpointError, match="target vocabulary") as err:
        load_ensemble([tmp_path / "a", tmp_path / "c"], "cpu")
    assert str(tmp_path / "c") in str(err.value)
