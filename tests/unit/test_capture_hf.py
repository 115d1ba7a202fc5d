"""attnkit.capture on tiny Hugging Face transformers models built from configs (no download):
BERT, GPT-2, a Llama with grouped-query attention, Marian (self- and cross-attention), T5 and ViT,
each run with ``attn_implementation="sdpa"`` under capture, against the same weights run with
``"eager"`` and ``output_attentions=True``: every layer and head within 1e-6 in float32, with
padding and a batch of three, and the SDPA model's outputs unchanged by the capture."""

from __future__ import annotations

import copy

import pytest
import torch

import attnkit

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install transformers)"
)

TOL = 1e-6
SMALL = {"vocab_size": 50}


def build(cls, config, implementation: str):
    torch.manual_seed(0)
    config = copy.deepcopy(config)  # the model sets its attention implementation on its config
    return cls._from_config(config, attn_implementation=implementation).eval()


def pair(cls, config):
    """The model with SDPA attention, and a copy of its weights with eager attention."""
    sdpa = build(cls, config, "sdpa")
    eager = build(cls, config, "eager")
    eager.load_state_dict(sdpa.state_dict())
    assert (sdpa.config._attn_implementation, eager.config._attn_implementation) == (
        "sdpa",
        "eager",
    )
    return sdpa, eager


def text_inputs(decoder: bool = False) -> dict:
    """A batch of three token sequences of lengths 7, 5 and 2 (right-padded)."""
    torch.manual_seed(1)
    ids = torch.randint(3, 50, (3, 7))
    mask = (torch.arange(7)[None, :] < torch.tensor([7, 5, 2])[:, None]).long()
    inputs = {"input_ids": ids * mask, "attention_mask": mask}
    if decoder:
        inputs["decoder_input_ids"] = torch.randint(3, 50, (3, 5))
    return inputs


def captured_and_eager(cls, config, inputs):
    sdpa, eager = pair(cls, config)
    with torch.no_grad():
        plain = sdpa(**inputs)
        with attnkit.capture(sdpa) as captured:
            out = sdpa(**inputs)
        reference = eager(**inputs, output_attentions=True)
    for key, value in plain.items():  # the SDPA model's own outputs, untouched
        if isinstance(value, torch.Tensor):
            assert torch.equal(out[key], value), key
    return captured, reference


def assert_equal_maps(records, maps, group: str, kind: str = "self"):
    """Each record (B, H, T, S) equals the eager model's map of the same layer."""
    chosen = [r for r in records if r.group == group and r.kind == kind]
    assert len(chosen) == len(maps) > 0
    for record, want in zip(chosen, maps):
        assert record.weights.shape == want.shape
        assert (record.weights - want).abs().max() < TOL, record.name


def test_bert():
    config = transformers.BertConfig(
        **SMALL, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    captured, eager = captured_and_eager(transformers.BertModel, config, text_inputs())
    assert [r.name for r in captured] == [
        "encoder.layer.0.attention.self",
        "encoder.layer.1.attention.self",
    ]
    assert_equal_maps(captured, eager.attentions, "encoder.layer")
    assert captured[0].weights[2, :, :, 2:].abs().max() == 0  # the padding of the third input


def test_gpt2():
    config = transformers.GPT2Config(
        **SMALL, n_embd=32, n_layer=3, n_head=4, n_positions=16, bos_token_id=0, eos_token_id=0
    )
    captured, eager = captured_and_eager(transformers.GPT2Model, config, text_inputs())
    assert [r.name for r in captured] == ["h.0.attn", "h.1.attn", "h.2.attn"]
    assert all(r.causal for r in captured)
    assert_equal_maps(captured, eager.attentions, "h")


@pytest.mark.parametrize("padded", [True, False])
def test_llama_with_grouped_query_attention(padded):
    config = transformers.LlamaConfig(
        **SMALL,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=37,
        max_position_embeddings=16,
    )
    inputs = text_inputs()
    if not padded:  # no mask: the key heads go to SDPA as they are, with enable_gqa
        inputs = {"input_ids": inputs["input_ids"][:, :6] + 1}
    captured, eager = captured_and_eager(transformers.LlamaModel, config, inputs)
    assert [r.name for r in captured] == ["layers.0.self_attn", "layers.1.self_attn"]
    assert all(r.causal and r.heads == 4 for r in captured)
    assert_equal_maps(captured, eager.attentions, "layers")


def test_marian_self_and_cross_attention():
    config = transformers.MarianConfig(
        **SMALL,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=37,
        decoder_ffn_dim=37,
        max_position_embeddings=16,
        pad_token_id=0,
        decoder_start_token_id=0,
    )
    inputs = text_inputs(decoder=True)
    captured, eager = captured_and_eager(transformers.MarianMTModel, config, inputs)
    assert_equal_maps(captured, eager.encoder_attentions, "model.encoder.layers")
    assert_equal_maps(captured, eager.decoder_attentions, "model.decoder.layers")
    assert_equal_maps(captured, eager.cross_attentions, "model.decoder.layers", "cross")
    cross = [r for r in captured if r.kind == "cross"]
    assert [r.name for r in cross] == [f"model.decoder.layers.{i}.encoder_attn" for i in (0, 1)]
    assert cross[0].weights.shape == (3, 4, 5, 7)


def test_t5_self_and_cross_attention_with_position_bias():
    config = transformers.T5Config(
        **SMALL, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_decoder_layers=2, num_heads=4
    )
    inputs = text_inputs(decoder=True)
    captured, eager = captured_and_eager(transformers.T5Model, config, inputs)
    assert_equal_maps(captured, eager.encoder_attentions, "encoder.block")
    assert_equal_maps(captured, eager.decoder_attentions, "decoder.block")
    assert_equal_maps(captured, eager.cross_attentions, "decoder.block", "cross")
    assert [r.name for r in captured if r.kind == "cross"] == [
        f"decoder.block.{i}.layer.1.EncDecAttention" for i in (0, 1)
    ]


def test_vit():
    config = transformers.ViTConfig(
        image_size=16,
        patch_size=4,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
    )
    torch.manual_seed(2)
    inputs = {"pixel_values": torch.randn(3, 3, 16, 16)}
    captured, eager = captured_and_eager(transformers.ViTModel, config, inputs)
    assert [r.weights.shape for r in captured] == [(3, 4, 17, 17)] * 2  # 16 patches and [CLS]
    assert [r.name for r in captured] == ["layers.0.attention", "layers.1.attention"]
    assert_equal_maps(captured, eager.attentions, "layers")
    assert captured.rollout().shape == (3, 17, 17)


def test_one_layer_online_rollout_and_bfloat16_of_bert():
    config = transformers.BertConfig(
        **SMALL, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37
    )
    sdpa, eager = pair(transformers.BertModel, config)
    inputs = text_inputs()
    with torch.no_grad():
        reference = eager(**inputs, output_attentions=True).attentions
        with attnkit.capture(sdpa, layers=[1], heads=[2]) as one:
            sdpa(**inputs)
        with attnkit.capture(sdpa, online="rollout") as rolled:
            sdpa(**inputs)
        with attnkit.capture(sdpa.to(torch.bfloat16)) as half:
            sdpa(**inputs)
        half_reference = eager.to(torch.bfloat16)(**inputs, output_attentions=True).attentions
    (record,) = one
    assert (record.layer, record.head_ids) == (1, (2,))
    assert (record.weights[:, 0] - reference[1][:, 2]).abs().max() < TOL
    from attnkit.explain.rollout import rollout

    means = torch.stack(reference).mean(2)  # (L, B, T, T)
    want = torch.stack([rollout(means[:, b]) for b in range(3)])
    assert (rolled.rollout() - want).abs().max() < TOL
    # bfloat16: the weights of the call's own bfloat16 queries and keys, computed in float32;
    # the eager model rounds its scores and weights to bfloat16 (8 bits), hence the tolerance
    for record, want in zip(half, half_reference):
        assert record.weights.dtype == torch.float32
        assert (record.weights - want.float()).abs().max() < 5e-3  # 1.9e-3 measured
