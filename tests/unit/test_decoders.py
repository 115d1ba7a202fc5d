"""The decoder registry: Seq2Seq builds the class ``model.decoder`` names, the config's choices
come from the registry, and the decoders' parameters keep the names, shapes and order that
checkpoints and optimizer states written before hold."""

import pytest

from attnkit.errors import ConfigError
from attnkit.models.decoders import DECODERS, BahdanauDecoder, LuongDecoder
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
    assert DECODERS == {"bahdanau": BahdanauDecoder, "luong": LuongDecoder}
    for style, cls in DECODERS.items():
        assert cls.style == style and issubclass(cls, Decoder)
    assert type(Seq2Seq(Seq2SeqConfig(attention="bahdanau"), 9, 9).decoder) is BahdanauDecoder
    model = Seq2Seq(Seq2SeqConfig(attention="scaled-dot", input_feeding=False), 9, 9)
    assert type(model.decoder) is LuongDecoder and not model.decoder.input_feeding
    with pytest.raises(ConfigError, match="model.decoder: 'transformer' is not one of auto, "):
        Seq2Seq(Seq2SeqConfig(decoder="transformer"), 9, 9)
