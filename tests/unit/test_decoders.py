"""The decoder registry: Seq2Seq builds the class ``model.decoder`` names, the config's choices
come from the registry, and the decoders' parameters keep the names, shapes and order that
checkpoints and optimizer states written before hold. The decoder without attention (``fixed``):
its function written out by hand, stepping, decoding, ensembles and the pairing rule."""

import pytest
import torch

from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding import beam_search, forced_decode, greedy_decode
from attnkit.decoding.ensemble import Ensemble
from attnkit.errors import ConfigError
from attnkit.models.decoders import (
    DECODERS,
    BahdanauDecoder,
    FixedContextDecoder,
    LuongDecoder,
    pairs_with,
)
from attnkit.models.seq2seq import Decoder, Seq2Seq, Seq2SeqConfig

#: the decoder's parameters, names and shapes in registration order, as checkpoints written before
#: the decoders became registered classes hold them (embedding 3, memory 8, hidden 5, vocab 9,
#: attention width 6); optimizer states list them in this order
OLD_DECODER_PARAMETERS = {
    "bahdanau-gru-L1": [
        ("embed.weight", (9, 3)),
        ("bridge.weight", (5, 8)),
        ("bridge.bias", (5,)),
        ("attention.v", (6,)),
        ("attention.query_proj.weight", (6, 5)),
        ("attention.key_proj.weight", (6, 8)),
        ("attention.key_proj.bias", (6,)),
        ("combine.weight", (5, 16)),
        ("combine.bias", (5,)),
        ("rnn.weight_ih_l0", (15, 11)),
        ("rnn.weight_hh_l0", (15, 5)),
        ("rnn.bias_ih_l0", (15,)),
        ("rnn.bias_hh_l0", (15,)),
        ("output.weight", (9, 5)),
        ("output.bias", (9,)),
    ],
    "luong-feed-lstm-L2": [
        ("embed.weight", (9, 3)),
        ("bridge.weight", (10, 8)),
        ("bridge.bias", (10,)),
        ("attention.v", (6,)),
        ("attention.query_proj.weight", (6, 5)),
        ("attention.key_proj.weight", (6, 8)),
        ("attention.key_proj.bias", (6,)),
        ("combine.weight", (5, 13)),
        ("combine.bias", (5,)),
        ("rnn.weight_ih_l0", (20, 8)),
        ("rnn.weight_hh_l0", (20, 5)),
        ("rnn.bias_ih_l0", (20,)),
        ("rnn.bias_hh_l0", (20,)),
        ("rnn.weight_ih_l1", (20, 5)),
        ("rnn.weight_hh_l1", (20, 5)),
        ("rnn.bias_ih_l1", (20,)),
        ("rnn.bias_hh_l1", (20,)),
        ("output.weight", (9, 5)),
        ("output.bias", (9,)),
    ],
    "luong-nofeed-gru-L1": [
        ("embed.weight", (9, 3)),
        ("bridge.weight", (5, 8)),
        ("bridge.bias", (5,)),
        ("attention.query_proj.weight", (6, 5)),
        ("attention.key_proj.weight", (6, 8)),
        ("attention.value_proj.weight", (6, 8)),
        ("attention.out_proj.weight", (8, 6)),
        ("combine.weight", (5, 13)),
        ("combine.bias", (5,)),
        ("rnn.weight_ih_l0", (15, 3)),
        ("rnn.weight_hh_l0", (15, 5)),
        ("rnn.bias_ih_l0", (15,)),
        ("rnn.bias_hh_l0", (15,)),
        ("output.weight", (9, 5)),
        ("output.bias", (9,)),
    ],
}
OLD_DECODER_CONFIGS = {
    "bahdanau-gru-L1": dict(attention="bahdanau", rnn="gru"),
    "luong-feed-lstm-L2": dict(attention="luong-concat", rnn="lstm", decoder_layers=2),
    "luong-nofeed-gru-L1": dict(attention="multihead", decoder="luong", input_feeding=False),
}


@pytest.mark.parametrize("name", OLD_DECODER_PARAMETERS)
def test_decoder_parameters_keep_their_names_shapes_and_order(name):
    cfg = Seq2SeqConfig(
        embedding_dim=3,
        encoder_hidden=4,
        decoder_hidden=5,
        attention_dim=6,
        heads=2,
        **OLD_DECODER_CONFIGS[name],
    )
    model = Seq2Seq(cfg, 7, 9)
    got = [(n, tuple(p.shape)) for n, p in model.decoder.named_parameters()]
    assert got == OLD_DECODER_PARAMETERS[name]
    assert list(model.state_dict()) == [n for n, _ in model.named_parameters()]  # no buffers


def test_decoders_come_from_the_registry():
    assert Seq2SeqConfig.CHOICES["decoder"] == ("auto", *DECODERS)
    assert DECODERS == {
        "bahdanau": BahdanauDecoder,
        "luong": LuongDecoder,
        "fixed": FixedContextDecoder,
    }
    for style, cls in DECODERS.items():
        assert cls.style == style and issubclass(cls, Decoder)
    assert type(Seq2Seq(Seq2SeqConfig(attention="bahdanau"), 9, 9).decoder) is BahdanauDecoder
    model = Seq2Seq(Seq2SeqConfig(attention="scaled-dot", input_feeding=False), 9, 9)
    assert type(model.decoder) is LuongDecoder and not model.decoder.input_feeding
    with pytest.raises(ConfigError, match="model.decoder: 'transformer' is not one of auto, "):
        Seq2Seq(Seq2SeqConfig(decoder="transformer"), 9, 9)


# ---- the decoder without attention ---------------------------------------------------------
SRC_V, TGT_V = 12, 10


def _none_model(rnn="gru", seed=0, **kw):
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(
        attention="none",
        rnn=rnn,
        embedding_dim=5,
        encoder_hidden=3,
        decoder_hidden=7,
        dropout=0.0,
        **kw,
    )
    return Seq2Seq(cfg, SRC_V, TGT_V).eval()


def _batch():
    src = torch.tensor([[5, 6, 7, 8, EOS_ID], [9, 4, EOS_ID, PAD_ID, PAD_ID]])
    tgt_in = torch.tensor([[BOS_ID, 4, 5, 6], [BOS_ID, 7, PAD_ID, PAD_ID]])
    return src, torch.tensor([5, 3]), tgt_in


def _gru_cell(x, h, rnn):
    """One GRU step written out from the layer's weights (torch's gate order r, z, n)."""
    gi = x @ rnn.weight_ih_l0.T + rnn.bias_ih_l0
    gh = h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def test_fixed_context_decoder_computes_the_classic_encoder_decoder():
    """s_0 = tanh(W_b c); s_t = GRU([y_{t-1}; c], s_{t-1}); logits = W tanh(W_o [s_t; c; y_{t-1}])
    with c the encoder's final state at every step; the weights are zeros."""
    model = _none_model()
    dec = model.decoder
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        _, c = model.encoder(src, lengths)  # (B, Dk): the last forward and backward states
        s = torch.tanh(dec.bridge(c))
        expected = []
        for t in range(tgt_in.size(1)):
            y = dec.embed(tgt_in[:, t])
            s = _gru_cell(torch.cat([y, c], -1), s, dec.rnn)
            expected.append(dec.output(torch.tanh(dec.combine(torch.cat([s, c, y], -1)))))
    torch.testing.assert_close(logits, torch.stack(expected, 1), atol=1e-6, rtol=1e-5)
    assert weights.shape == (2, 4, 5) and torch.all(weights == 0)
    assert dec.attention is None and not model.has_attention
    assert not any(name.startswith("attention") for name, _ in dec.named_parameters())


@pytest.mark.parametrize("rnn, layers", [("gru", 1), ("lstm", 2)])
def test_fixed_context_stepping_equals_teacher_forcing(rnn, layers):
    model = _none_model(rnn, decoder_layers=layers)
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        logits, _ = model(src, lengths, tgt_in)
        memory, state = model.encode(src, lengths)
        for t in range(tgt_in.size(1)):
            step_logits, state, w = model.decoder.step(tgt_in[:, t], state, memory)
            torch.testing.assert_close(step_logits, logits[:, t], atol=1e-6, rtol=1e-5)
            assert w.shape == (2, 5) and torch.all(w == 0)


def test_fixed_context_decodes_greedy_beam_and_forced():
    model = _none_model(seed=3)
    with torch.no_grad():
        model.decoder.output.weight.mul_(4.0)  # confident outputs, as a trained model has
    src, lengths, tgt_in = _batch()
    greedy = greedy_decode(model, src, lengths, 8)
    beams = beam_search(model, src, lengths, 8, beam_size=3, n_best=3)
    for i, hyp in enumerate(greedy):
        assert hyp.weights.shape == (len(hyp.tokens) + hyp.finished, int(lengths[i]))
        assert torch.all(hyp.weights == 0)
        # beam search's hypotheses are re-scored exactly by forced decoding (the context moved
        # with the rows it selected)
        for beam in beams[i]:
            (forced,) = forced_decode(model, src[i : i + 1], lengths[i : i + 1], [beam.tokens])
            if beam.finished:
                assert forced.score == pytest.approx(beam.score, abs=1e-4)


def test_ensembles_average_only_the_attention_that_exists():
    src, lengths, _ = _batch()
    none = _none_model(seed=1)
    torch.manual_seed(2)
    attending = Seq2Seq(
        Seq2SeqConfig(
            attention="bahdanau", embedding_dim=5, encoder_hidden=3, decoder_hidden=7, dropout=0.0
        ),
        SRC_V,
        TGT_V,
    ).eval()
    mixed, alone = Ensemble([none, attending]).eval(), Ensemble([none]).eval()
    assert mixed.has_attention and not alone.has_attention
    prev = torch.full((2,), BOS_ID)
    with torch.no_grad():
        memories, states = mixed.encode(src, lengths)
        _, _, w = mixed.decoder.step(prev, states, memories)
        memory, state = attending.encode(src, lengths)
        _, _, expected = attending.decoder.step(prev, state, memory)
    torch.testing.assert_close(w, expected)  # not halved by the member that does not attend
    for hyps in beam_search(mixed, src, lengths, 6, beam_size=2):
        assert hyps[0].weights.sum() > 0
    assert all(torch.all(h.weights == 0) for h in greedy_decode(alone, src, lengths, 6))


def test_attention_none_goes_with_the_fixed_decoder_only():
    assert Seq2SeqConfig(attention="none").decoder_style == "fixed"
    assert pairs_with("fixed", "none") and not pairs_with("fixed", "bahdanau")
    assert pairs_with("luong", "multihead") and not pairs_with("bahdanau", "none")
    with pytest.raises(
        ConfigError, match="model.decoder: bahdanau does not go with attention none"
    ):
        Seq2SeqConfig(attention="none", decoder="bahdanau").validate("f.yaml: model")
    with pytest.raises(ConfigError, match="fixed does not go with attention luong-dot"):
        Seq2Seq(Seq2SeqConfig(attention="luong-dot", decoder="fixed"), 9, 9)
