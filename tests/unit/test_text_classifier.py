"""The text classifier: shapes and masking for every encoder and pooling (padding never gets
weight nor changes an answer), attention_override used instead of the computed weights, the
embeddings split, and Lin et al.'s penalty."""

from __future__ import annotations

import pytest
import torch

from attnkit.config import from_dict
from attnkit.errors import ConfigError
from attnkit.models.text_classifier import (
    ENCODERS,
    TextClassifier,
    TextModelConfig,
    structured_penalty,
)

ATTENTIONS = ("additive", "scaled_dot", "structured", "none")
V, C = 30, 3


def _model(encoder: str, attention: str, pool: str = "mean") -> TextClassifier:
    torch.manual_seed(0)
    cfg = TextModelConfig(
        encoder=encoder,
        attention=attention,
        pool=pool,
        embedding_dim=8,
        hidden=6,
        attention_dim=5,
        heads=3,
        dropout=0.0,
    )
    return TextClassifier(cfg, V, C).eval()


def _batch(lengths=(7, 3, 5, 1)):
    torch.manual_seed(1)
    s = max(lengths)
    tokens = torch.randint(1, V, (len(lengths), s))
    mask = torch.arange(s) < torch.tensor(lengths).unsqueeze(1)
    return tokens.masked_fill(~mask, 0), mask


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_shapes_and_no_weight_on_padding(encoder, attention):
    model = _model(encoder, attention)
    tokens, mask = _batch()
    logits, weights = model(tokens, mask)
    assert logits.shape == (4, C)
    if attention == "none":
        assert weights is None
        return
    shape = (4, 3, 7) if attention == "structured" else (4, 7)
    assert weights.shape == shape
    rows = weights if weights.dim() == 3 else weights.unsqueeze(1)
    assert torch.all(rows.masked_select(~mask.unsqueeze(1)) == 0)
    torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[:2]))


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
@pytest.mark.parametrize("attention", [*ATTENTIONS, "max"])
def test_padding_changes_no_answer(encoder, attention):
    """A sentence scores the same alone as padded in a batch with a longer one."""
    model = _model(encoder, "none" if attention == "max" else attention, pool="max")
    tokens, mask = _batch((7, 3))
    batched, _ = model(tokens, mask)
    alone, _ = model(tokens[1:, :3], mask[1:, :3])
    torch.testing.assert_close(batched[1:], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attention", ["additive", "scaled_dot", "structured"])
def test_attention_override_replaces_the_computed_weights(attention):
    model = _model("bilstm", attention)
    tokens, mask = _batch()
    logits, weights = model(tokens, mask)
    same, given = model(tokens, mask, attention_override=weights)
    torch.testing.assert_close(same, logits)
    # all the weight on word 0 vs on word 2: two different answers, each the override's
    first, second = torch.zeros_like(weights), torch.zeros_like(weights)
    first[..., 0], second[..., 2] = 1.0, 1.0
    out_first, used = model(tokens, mask, attention_override=first)
    out_second, _ = model(tokens, mask, attention_override=second)
    assert torch.equal(used, first)
    assert not torch.allclose(out_first[0], out_second[0])
    assert not torch.allclose(out_first[0], logits[0])
    with pytest.raises(ValueError, match="shape"):
        model(tokens, mask, attention_override=torch.ones(4, 2))


def test_override_weight_on_padding_is_dropped():
    model = _model("bilstm", "additive")
    tokens, mask = _batch((7, 3))
    on_padding = torch.zeros(2, 7)
    on_padding[:, 0], on_padding[1, 5] = 0.5, 0.5  # row 1: half of it on padding
    _, used = model(tokens, mask, attention_override=on_padding)
    assert used[1, 5] == 0 and used[1, 0] == 0.5


def test_a_model_without_attention_refuses_an_override():
    model = _model("cnn", "none")
    tokens, mask = _batch()
    with pytest.raises(ValueError, match="no attention"):
        model(tokens, mask, attention_override=torch.ones(4, 7))


def test_forward_embedded_is_forward_split_at_the_embeddings():
    model = _model("bigru", "additive")
    tokens, mask = _batch()
    embedded = model.embed(tokens)
    assert embedded.shape == (4, 7, 8)
    a, wa = model(tokens, mask)
    b, wb = model.forward_embedded(embedded, mask)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(wa, wb)


def test_the_structured_penalty_is_zero_for_distinct_one_hot_rows_and_two_for_equal_ones():
    distinct = torch.eye(3, 5).unsqueeze(0)  # (1, 3, 5): three heads on three words
    assert structured_penalty(distinct).item() == 0
    same = torch.zeros(1, 2, 4)
    same[..., 1] = 1.0  # both heads on one word: AA^T = all ones; off-diagonal 1 each
    assert structured_penalty(same).item() == pytest.approx(2.0)


def test_config_refuses_bad_values_naming_the_key():
    with pytest.raises(ConfigError, match="model.encoder: 'transformer' is not one of"):
        from_dict(TextModelConfig, {"encoder": "transformer"}, "x.yaml: model")
    with pytest.raises(ConfigError, match=r"model.dropout: must be in \[0, 1\)"):
        from_dict(TextModelConfig, {"dropout": 1.0}, "x.yaml: model")
    with pytest.raises(ConfigError, match="model.kernel_sizes"):
        from_dict(TextModelConfig, {"kernel_sizes": []}, "x.yaml: model")
