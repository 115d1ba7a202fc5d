"""Greedy and beam search: beam 1 == greedy, beam finds what greedy misses, scores re-score
exactly."""

import math

import pytest
import torch
from torch import nn

from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding import beam_search, greedy_decode, max_output_length
from attnkit.decoding.beam import length_penalty
from attnkit.models.seq2seq import DecoderState, Memory, Seq2Seq, Seq2SeqConfig

SRC_V, TGT_V = 12, 9


# ---- a deterministic stub where greedy is suboptimal ---------------------------------------------
A, B_, C = 4, 5, 6  # token ids of the stub's vocabulary (0-3 are the specials)
STUB_V = 7


def _row(**probs):
    """A log-prob row over STUB_V tokens: the given ids get their probability, the rest share what
    is left."""
    p = torch.full((STUB_V,), 0.0)
    for tok, prob in probs.items():
        p[int(tok[1:])] = prob
    rest = (p == 0).sum()
    p[p == 0] = (1.0 - p.sum()) / rest
    return p.log()


class _StubDecoder(nn.Module):
    """Log-probs depend only on the previous token (a bigram table); weights are one-hot on step mod
    S."""

    def __init__(self):
        super().__init__()
        table = torch.stack(
            [_row(t0=0.999)] * STUB_V
        )  # PAD/UNK rows: never reached in a useful way
        table[BOS_ID] = _row(**{f"t{A}": 0.55, f"t{B_}": 0.40})  # greedy takes A ...
        table[A] = _row(**{f"t{C}": 0.40, f"t{EOS_ID}": 0.35})  # ... then C (0.55 * 0.40 = 0.22)
        table[C] = _row(**{f"t{EOS_ID}": 0.99})  # A C </s>: 0.218
        table[B_] = _row(**{f"t{EOS_ID}": 0.95})  # B </s>: 0.38, which greedy misses
        table[EOS_ID] = _row(**{f"t{EOS_ID}": 0.99})
        self.register_buffer("table", table)
        self.calls = 0

    def step(self, prev, state: DecoderState, memory: Memory):
        self.calls += 1
        t = state.rnn[0, :, 0].long()  # (B,) step counter carried in the state
        s = memory.mask.size(1)
        weights = torch.nn.functional.one_hot(t % s, s).float() * memory.mask
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-9)
        return self.table[prev], DecoderState(state.rnn + 1), weights


class StubModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = _StubDecoder()

    def encode(self, src, src_lengths):
        b, s = src.shape
        memory = Memory(torch.zeros(b, s, 1), None, src != PAD_ID)
        return memory, DecoderState(torch.zeros(1, b, 1))


def _stub_src():
    src = torch.tensor([[7, 8, 9, EOS_ID]])
    return src, torch.tensor([4])


def test_stub_greedy_takes_the_locally_best_path():
    model = StubModel()
    src, lengths = _stub_src()
    (hyp,) = greedy_decode(model, src, lengths, max_len=10)
    assert hyp.tokens == [A, C] and hyp.finished
    assert hyp.score == pytest.approx(math.log(0.55 * 0.40 * 0.99), abs=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_two_finds_the_sequence_greedy_misses(alpha):
    model = StubModel()
    src, lengths = _stub_src()
    (hyps,) = beam_search(model, src, lengths, max_len=10, beam_size=2, alpha=alpha, n_best=2)
    assert hyps[0].tokens == [B_] and hyps[0].finished
    assert hyps[0].score == pytest.approx(math.log(0.40 * 0.95), abs=1e-5)
    assert hyps[1].tokens == [A, C]
    assert hyps[1].score == pytest.approx(math.log(0.55 * 0.40 * 0.99), abs=1e-5)
    assert hyps[0].score > hyps[1].score
    # weights: one row per emitted token (</s> included), one column per source token
    assert hyps[0].weights.shape == (2, 4)
    assert hyps[1].weights.shape == (3, 4)
    torch.testing.assert_close(hyps[1].weights, torch.eye(4)[:3])


def test_stub_beam_one_is_greedy():
    model = StubModel()
    src, lengths = _stub_src()
    (greedy,) = greedy_decode(model, src, lengths, max_len=10)
    ((beam,),) = beam_search(model, src, lengths, max_len=10, beam_size=1, alpha=1.0)
    assert beam.tokens == greedy.tokens
    assert beam.score == pytest.approx(greedy.score)


def test_max_len_is_respected_and_unfinished_hypotheses_are_marked():
    model = StubModel()
    src, lengths = _stub_src()
    (g,) = greedy_decode(model, src, lengths, max_len=1)
    assert g.tokens == [A] and not g.finished and g.weights.shape == (1, 4)
    (hyps,) = beam_search(model, src, lengths, max_len=1, beam_size=2, alpha=0.0, n_best=2)
    assert [h.tokens for h in hyps] == [[A], [B_]]
    assert all(not h.finished and h.weights.shape == (1, 4) for h in hyps)
    assert model.decoder.calls == 2


# ---- a random real model -------------------------------------------------------------------------
def _random_model(attention="bahdanau", rnn="gru", seed=0, sharpen=4.0):
    """A tiny random model whose output layer is sharpened so outputs look trained
    (and end with </s>)."""
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(
        attention=attention,
        rnn=rnn,
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=8,
        heads=2,
        dropout=0.0,
    )
    model = Seq2Seq(cfg, SRC_V, TGT_V).eval()
    with torch.no_grad():
        model.decoder.output.weight.mul_(sharpen)
        model.decoder.output.bias[EOS_ID] += 1.0
    return model


def _src(lengths=(7, 5, 3, 2), seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD_ID, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, : n - 1] = torch.randint(4, SRC_V, (n - 1,), generator=g)
        src[i, n - 1] = EOS_ID
    return src, torch.tensor(lengths)


def _rescore(model, src, lengths, i, hyp):
    """Teacher-forced sum of log-probs of hyp's tokens (+ </s> when finished) and its attention
    rows."""
    out = hyp.tokens + ([EOS_ID] if hyp.finished else [])
    tgt_in = torch.tensor([[BOS_ID] + out[:-1]])
    n = int(lengths[i])
    with torch.no_grad():
        logits, weights = model(src[i : i + 1, :n], lengths[i : i + 1], tgt_in)
    logp = torch.log_softmax(logits.double(), -1)[0]
    return float(logp[torch.arange(len(out)), torch.tensor(out)].sum()), weights[0]


@pytest.mark.parametrize(
    "attention, rnn", [("bahdanau", "gru"), ("luong-general", "lstm"), ("multihead", "gru")]
)
def test_beam_one_equals_greedy(attention, rnn):
    model = _random_model(attention, rnn)
    src, lengths = _src()
    greedy = greedy_decode(model, src, lengths, max_len=12)
    beam = beam_search(model, src, lengths, max_len=12, beam_size=1, alpha=1.0)
    assert len(greedy) == len(beam) == 4
    for g, (b,) in zip(greedy, beam):
        assert b.tokens == g.tokens
        assert b.finished == g.finished
        assert b.score == pytest.approx(g.score, abs=1e-4)
        torch.testing.assert_close(b.weights, g.weights, atol=1e-5, rtol=1e-5)


def test_greedy_scores_and_weights_rescore_with_teacher_forcing():
    model = _random_model()
    src, lengths = _src()
    for i, hyp in enumerate(greedy_decode(model, src, lengths, max_len=12)):
        score, weights = _rescore(model, src, lengths, i, hyp)
        assert hyp.score == pytest.approx(score, abs=1e-4)
        torch.testing.assert_close(hyp.weights, weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_five_scores_equal_teacher_forced_rescoring(alpha):
    model = _random_model("luong-concat", "lstm", seed=3)
    src, lengths = _src()
    results = beam_search(model, src, lengths, max_len=12, beam_size=5, alpha=alpha, n_best=5)
    n_finished = 0
    for i, hyps in enumerate(results):
        assert len(hyps) == 5
        for hyp in hyps:
            score, weights = _rescore(model, src, lengths, i, hyp)
            assert hyp.score == pytest.approx(score, abs=1e-4), (i, hyp.tokens)
            torch.testing.assert_close(hyp.weights, weights, atol=1e-5, rtol=1e-5)
            n_finished += hyp.finished
        # distinct hypotheses
        assert len({(tuple(h.tokens), h.finished) for h in hyps}) == 5
    assert n_finished > 0


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0])
def test_beam_results_sorted_best_first_with_n_best_count(alpha):
    model = _random_model(seed=5)
    src, lengths = _src()
    results = beam_search(model, src, lengths, max_len=10, beam_size=4, alpha=alpha, n_best=3)
    assert len(results) == 4
    for i, hyps in enumerate(results):
        assert len(hyps) == 3
        ranked = [
            h.score / float(length_penalty(torch.tensor(len(h.tokens) + h.finished), alpha))
            for h in hyps
        ]
        assert ranked == sorted(ranked, reverse=True)
        for h in hyps:
            rows = len(h.tokens) + 1 if h.finished else len(h.tokens)
            assert h.weights.shape == (rows, int(lengths[i]))
            assert EOS_ID not in h.tokens
            assert len(h.tokens) <= 10
            torch.testing.assert_close(h.weights.sum(-1), torch.ones(rows))


def test_beam_never_worse_than_greedy_without_length_penalty():
    model = _random_model(seed=7)
    src, lengths = _src()
    greedy = greedy_decode(model, src, lengths, max_len=12)
    beam = beam_search(model, src, lengths, max_len=12, beam_size=5, alpha=0.0)
    for g, (b,) in zip(greedy, beam):
        if g.finished and b.finished:
            assert b.score >= g.score - 1e-5


def test_finished_hypotheses_weights_cover_true_source_length_only():
    model = _random_model()
    src, lengths = _src()
    for i, g in enumerate(greedy_decode(model, src, lengths, max_len=20)):
        assert g.finished
        assert g.weights.shape == (len(g.tokens) + 1, int(lengths[i]))
        torch.testing.assert_close(g.weights.sum(-1), torch.ones(len(g.tokens) + 1))


@pytest.mark.parametrize("max_len", [1, 2, 3])
def test_max_len_respected_on_a_model_that_never_stops(max_len):
    model = _random_model()
    with torch.no_grad():
        model.decoder.output.bias[EOS_ID] = -1e4
    src, lengths = _src()
    for g in greedy_decode(model, src, lengths, max_len=max_len):
        assert len(g.tokens) == max_len and not g.finished and g.weights.shape[0] == max_len
    for hyps in beam_search(model, src, lengths, max_len=max_len, beam_size=3, alpha=1.0, n_best=3):
        for h in hyps:
            assert len(h.tokens) == max_len and not h.finished and h.weights.shape[0] == max_len


def test_n_best_larger_than_beam_is_rejected():
    model = _random_model()
    src, lengths = _src()
    with pytest.raises(ValueError, match="n_best"):
        beam_search(model, src, lengths, max_len=5, beam_size=2, n_best=3)


def test_max_output_length_is_one_limit_per_input():
    lengths = torch.tensor([4, 10])
    assert max_output_length(lengths, 2.0, 5, 300).tolist() == [13, 25]
    assert max_output_length(lengths, 2.0, 5, 12).tolist() == [12, 12]
    assert max_output_length(lengths, 0.0, 0, 10).tolist() == [1, 1]


@pytest.mark.parametrize("beam", [1, 3])
def test_each_input_stops_at_its_own_limit_whatever_it_is_batched_with(beam):
    """A model that never ends its outputs: each row stops at its own limit, and decodes exactly
    as it does alone."""
    model = _random_model()
    with torch.no_grad():
        model.decoder.output.bias[EOS_ID] = -1e4
    src, lengths = _src()
    limits = torch.tensor([6, 2, 4, 1])
    if beam == 1:
        together = [[h] for h in greedy_decode(model, src, lengths, limits)]
    else:
        together = beam_search(model, src, lengths, limits, beam_size=beam, n_best=beam)
    for i, hyps in enumerate(together):
        one = src[i : i + 1, : int(lengths[i])]
        if beam == 1:
            alone = [greedy_decode(model, one, lengths[i : i + 1], int(limits[i]))[0]]
        else:
            alone = beam_search(model, one, lengths[i : i + 1], int(limits[i]), beam, n_best=beam)[
                0
            ]
        for h, a in zip(hyps, alone):
            assert len(h.tokens) == int(limits[i]) and not h.finished
            assert h.tokens == a.tokens
            assert h.score == pytest.approx(a.score, abs=1e-4)
            torch.testing.assert_close(h.weights, a.weights, rtol=1e-4, atol=1e-5)
