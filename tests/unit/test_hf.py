"""Pretrained Hugging Face models through ``attnkit.load("hf:DIR")``: tiny BERT (a classifier and
an encoder), GPT-2, a Llama with grouped-query attention, Marian, T5 and ViT, built from configs
and saved with ``save_pretrained`` (no download, ``HF_HUB_OFFLINE=1``). Each result's attention,
every layer and head, equals the same weights run with eager attention and
``output_attentions=True`` within 1e-6; its answer equals the plain SDPA model's; its views draw
the tokenizer's tokens, subwords merged to words on request."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import attnkit

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install attnkit[hf])"
)

TOL = 1e-6
TEXT = "the cats looked at attention"
PROMPT = "the cat sat"


pytestmark = pytest.mark.usefixtures("hf_offline")  # tests/conftest.py: nothing downloaded


def from_dir(cls, directory, implementation):
    return cls.from_pretrained(directory, attn_implementation=implementation).eval()


def tokenized(directory, text):
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    return tokenizer, tokenizer(text, return_tensors="pt")


def assert_maps(part, attentions):
    """A part's (L, H, T, S) maps equal eager attention's tuple of (1, H, T, S), layer by layer."""
    assert part.heads.shape[0] == len(attentions) > 0
    for layer, want in zip(part.heads, attentions):
        assert layer.shape == tuple(want.shape[1:])
        assert np.abs(layer - want[0].numpy()).max() < TOL


def reference_rollout(attentions) -> np.ndarray:
    """Abnar & Zuidema's rollout of eager maps, written out here: heads averaged, 0.5 A + 0.5 I,
    rows renormalised, multiplied from the lowest layer up."""
    out = None
    for layer in attentions:
        a = layer[0].double().mean(0).numpy()
        a = 0.5 * a + 0.5 * np.eye(a.shape[0])
        a = a / a.sum(-1, keepdims=True)
        out = a if out is None else a @ out
    return out


def test_a_bert_classifier(tiny_hf):
    directory = tiny_hf("bert")
    model = attnkit.load(f"hf:{directory}")
    assert model.kind.name == "classifier" and model.model.config._attn_implementation == "sdpa"
    result = model.classify(TEXT)
    tokenizer, inputs = tokenized(directory, TEXT)
    cls = transformers.BertForSequenceClassification
    with torch.no_grad():
        eager = from_dir(cls, directory, "eager")(**inputs, output_attentions=True)
        plain = from_dir(cls, directory, "sdpa")(**inputs)
    assert_maps(result.parts["self"], eager.attentions)
    assert np.abs(result.logits - plain.logits[0].numpy()).max() < TOL
    probs = torch.softmax(plain.logits[0], -1)
    assert result.label == ["negative", "positive"][int(probs.argmax())]
    assert result.probs["positive"] == pytest.approx(float(probs[1]), abs=1e-6)
    assert result.source_tokens == tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert result.heads.shape == (12, 2, 4, 12)  # (T, L, H, S), as a Transformer's translation
    assert np.abs(result.rollout() - reference_rollout(eager.attentions)).max() < TOL
    # a list of texts: one result each, the same as one at a time
    again = model.classify([TEXT, "a dog barked"])
    assert len(again) == 2 and np.array_equal(again[0].logits, result.logits)


def test_words_merge_subwords_by_the_tokenizer(tiny_hf):
    result = attnkit.load(f"hf:{tiny_hf('bert')}").classify(TEXT)
    tokens = result.source_tokens
    assert tokens == "[CLS] the cat ##s lo ##o ##ked at atten ##t ##ion [SEP]".split()
    record = result.record(words=True)
    assert record.source_tokens == "[CLS] the cats looked at attention [SEP]".split()
    assert record.output_tokens == record.source_tokens
    heads = result.parts["self"].heads.astype(np.float64)  # (L, H, T, S) tokens
    merged = record.heads.transpose(1, 2, 0, 3)  # (L, H, T', S') words
    # the weight on "cats" is the weight on "cat" plus "##s"; the row of "looked" is the mean of
    # its three pieces' rows
    want = heads[:, :, 1, 2] + heads[:, :, 1, 3]
    assert np.abs(merged[:, :, 1, 2] - want).max() < 1e-12
    want = heads[:, :, 4:7, 8:11].sum(-1).mean(-1)  # "looked" row, "attention" column
    assert np.abs(merged[:, :, 3, 5] - want).max() < 1e-12
    assert np.allclose(merged.sum(-1), 1.0)


def test_show_and_to_dict_carry_the_tokens(tiny_hf):
    result = attnkit.load(f"hf:{tiny_hf('bert')}").classify(TEXT)
    page = result.show().read_text(encoding="utf-8")  # outside a notebook: a page, its path
    for token in ("##ked", "atten", "[CLS]"):
        assert f'"{token}"' in page
    words = result.show(words=True).read_text(encoding="utf-8")
    assert '"looked"' in words and '"##ked"' not in words
    data = result.to_dict()
    assert data["label"] == result.label and data["parts"]["self"]["key_tokens"][3] == "##s"
    assert np.array(data["parts"]["self"]["heads"]).shape == (2, 4, 12, 12)
    assert "self attention" in result._repr_html_()


def test_a_bert_encoder(tiny_hf):
    directory = tiny_hf("bert-encoder")
    result = attnkit.load(f"hf:{directory}").encode(TEXT)
    _, inputs = tokenized(directory, TEXT)
    with torch.no_grad():
        cls = transformers.BertModel
        eager = from_dir(cls, directory, "eager")(**inputs, output_attentions=True)
        plain = from_dir(cls, directory, "sdpa")(**inputs)
    assert_maps(result.parts["self"], eager.attentions)
    assert np.abs(result.states - plain.last_hidden_state[0].numpy()).max() < TOL


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_a_decoder_only_generator(tiny_hf, kind):
    directory = tiny_hf(kind)
    model = attnkit.load(f"hf:{directory}")
    result = model.generate(PROMPT, max_new_tokens=5)
    cls = transformers.GPT2LMHeadModel if kind == "gpt2" else transformers.LlamaForCausalLM
    tokenizer, inputs = tokenized(directory, PROMPT)
    plain = from_dir(cls, directory, "sdpa")
    with torch.no_grad():
        ids = plain.generate(**inputs, max_new_tokens=5, do_sample=False, num_beams=1)
        assert result.ids == ids[0].tolist()
        eager = from_dir(cls, directory, "eager")(ids, output_attentions=True)
    assert_maps(result.parts["self"], eager.attentions)
    assert result.output == tokenizer.decode(ids[0, inputs["input_ids"].shape[1] :])
    assert result.source_tokens == tokenizer.convert_ids_to_tokens(ids[0])
    heads = result.parts["self"].heads
    assert np.triu(heads, k=1).max() == 0  # causal: no position looks ahead
    if kind == "llama":  # grouped-query attention: 4 query heads share 2 key/value heads
        assert model.model.config.num_key_value_heads == 2 and heads.shape[1] == 4


def test_generated_tokens_are_grouped_into_words_by_decoding(tiny_hf):
    from attnkit.families.hf.words import from_ids

    for kind, tokens, words, labels in (
        (
            "bert",
            "[CLS] the cat ##s lo ##o ##ked [SEP]",
            [None, 0, 1, 1, 2, 2, 2, None],
            ["[CLS]", "the", "cats", "looked", "[SEP]"],
        ),
        (
            "gpt2",
            "▁the ▁cat s ▁ lo oked ▁at",
            [0, 1, 1, 2, 2, 2, 3],
            ["the", "cats", "looked", "at"],
        ),
    ):
        tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_hf(kind))
        found = from_ids(tokenizer, tokenizer.convert_tokens_to_ids(tokens.split()))
        assert found.labels == tokens.split()
        assert found.words == words and found.unit_labels() == labels
    result = attnkit.load(f"hf:{tiny_hf('gpt2')}").generate("the cats looked", max_new_tokens=3)
    record = result.record(words=True)
    assert record.source_tokens[:3] == ["the", "cats", "looked"]  # the prompt's, by word_ids
    assert "".join(record.source_tokens[3:]).replace(" ", "") == result.output.replace(" ", "")


@pytest.mark.parametrize("kind", ["marian", "t5"])
def test_an_encoder_decoder_translates_with_three_kinds_of_attention(tiny_hf, kind):
    directory = tiny_hf(kind)
    (result,) = attnkit.load(f"hf:{directory}").translate(TEXT, max_new_tokens=6)
    t = transformers
    cls = t.MarianMTModel if kind == "marian" else t.T5ForConditionalGeneration
    tokenizer, inputs = tokenized(directory, TEXT)
    with torch.no_grad():
        ids = from_dir(cls, directory, "sdpa").generate(
            **inputs, max_new_tokens=6, do_sample=False, num_beams=1
        )
        assert result.ids == ids[0].tolist()
        eager = from_dir(cls, directory, "eager")(
            **inputs, decoder_input_ids=ids[:, :-1], output_attentions=True
        )
    assert_maps(result.parts["encoder"], eager.encoder_attentions)
    assert_maps(result.parts["decoder"], eager.decoder_attentions)
    assert_maps(result.parts["cross"], eager.cross_attentions)
    # as attnkit's translations: rows the output tokens, columns the source tokens
    source = inputs["input_ids"].shape[1]
    assert result.main == "cross" and result.weights.shape == (ids.shape[1] - 1, source)
    assert result.output_tokens == tokenizer.convert_ids_to_tokens(ids[0, 1:])
    assert result.source_tokens == tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert result.output == tokenizer.decode(ids[0, 1:], skip_special_tokens=True)
    cross = torch.stack(eager.cross_attentions)[:, 0].double().mean((0, 1)).numpy()  # (T, S)
    want = cross @ reference_rollout(eager.encoder_attentions)
    assert np.abs(result.rollout() - want).max() < TOL
    encoder = reference_rollout(eager.encoder_attentions)
    assert np.abs(result.rollout("encoder") - encoder).max() < TOL


def test_a_vit_image_classifier(tiny_hf, tmp_path):
    directory = tiny_hf("vit")
    image = np.random.default_rng(0).integers(0, 256, (20, 24, 3)).astype(np.uint8)
    result = attnkit.load(f"hf:{directory}").classify(image)
    processor = transformers.AutoImageProcessor.from_pretrained(directory)
    pixels = processor(images=image, return_tensors="pt")["pixel_values"]
    cls = transformers.ViTForImageClassification
    with torch.no_grad():
        eager = from_dir(cls, directory, "eager")(pixels, output_attentions=True)
        plain = from_dir(cls, directory, "sdpa")(pixels)
    assert_maps(result.parts["self"], eager.attentions)
    assert np.abs(result.logits - plain.logits[0].numpy()).max() < TOL
    assert result.label in ("cat", "dog", "bird") and result.source == "an image of 24x20"
    assert result.source_tokens[:3] == ["[CLS]", "r0c0", "r0c1"]
    assert result.source_tokens[-1] == "r3c3" and len(result.source_tokens) == 17
    # the same image from a file, and as a PIL image
    from PIL import Image

    Image.fromarray(image).save(tmp_path / "image.png")
    model = attnkit.load(f"hf:{directory}")
    for same in (tmp_path / "image.png", str(tmp_path / "image.png"), Image.fromarray(image)):
        assert np.array_equal(model.classify(same).logits, result.logits)


def test_a_bfloat16_model_gives_float32_weights_near_eager_bfloat16(tiny_hf):
    directory = tiny_hf("bert")
    result = attnkit.load(f"hf:{directory}", dtype="bfloat16").classify(TEXT)
    _, inputs = tokenized(directory, TEXT)
    eager = transformers.BertForSequenceClassification.from_pretrained(
        directory, attn_implementation="eager", dtype=torch.bfloat16
    ).eval()
    with torch.no_grad():
        want = eager(**inputs, output_attentions=True).attentions
    heads = result.parts["self"].heads
    assert heads.dtype == np.float32
    for layer, reference in zip(heads, want):  # eager rounds its weights to bfloat16 (8 bits)
        assert np.abs(layer - reference[0].float().numpy()).max() < 5e-3


def test_the_api_docs_example_runs(tmp_path, monkeypatch):
    """docs/API.md's "Pretrained Transformers" example, as written, in a scratch directory."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "API.md"
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## Pretrained Transformers") :]
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(doc), "exec"), {})  # noqa: S102 - the doc's own code
    assert (tmp_path / "gpt2-layer2-head1.png").read_bytes().startswith(b"\x89PNG")
