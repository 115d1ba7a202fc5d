"""Gradient saliency: rows that read like attention, equal to autograd's own Jacobian."""

import pytest
import torch
from test_decoding import _random_model

from attnkit.accel.backend import resolve
from attnkit.data.batching import Example, collate
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.explain import METHODS, saliency_maps
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig

TARGETS = {0: [4, 5, 6], 1: [7]}


def _batch():
    return collate(
        [Example([4, 5, 6, 7, 8, EOS_ID], TARGETS[0], 0), Example([9, 10, EOS_ID], TARGETS[1], 1)]
    )


def _targets(batch):
    return [TARGETS[i] for i in batch.indices]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("attention", ["bahdanau", "luong-general"])
def test_maps_have_one_row_per_output_token_summing_to_one(method, attention):
    model, batch = _random_model(attention), _batch()
    maps = saliency_maps(model, batch.src, batch.src_lengths, _targets(batch), method, steps=8)
    for row, m in enumerate(maps):
        t, s = len(_targets(batch)[row]) + 1, int(batch.src_lengths[row])
        assert m.shape == (t, s)
        assert bool((m >= 0).all())
        torch.testing.assert_close(m.sum(-1), torch.ones(t))


def test_gradient_saliency_is_the_norm_of_autograds_jacobian_row():
    model, batch = _random_model("bahdanau"), _batch()
    target = _targets(batch)[0]  # row 0: the longer source and target
    (first,) = saliency_maps(model, batch.src[:1], batch.src_lengths[:1], [target])
    # the same quantity by hand: d log p(y_j) / d embeddings, for each step j
    emb = model.encoder.embed
    captured = {}

    def keep(_, __, out):
        out.retain_grad()
        captured["emb"] = out

    handle = emb.register_forward_hook(keep)
    tgt_in = torch.tensor([[BOS_ID, *target]])
    tgt_out = torch.tensor([[*target, EOS_ID]])
    expected = []
    try:
        for j in range(len(target) + 1):
            model.zero_grad()
            logits, _ = model(batch.src[:1], batch.src_lengths[:1], tgt_in)
            logp = torch.log_softmax(logits, -1)[0, j, tgt_out[0, j]]
            logp.backward()
            expected.append(captured["emb"].grad[0].norm(dim=-1))
    finally:
        handle.remove()
    expected = torch.stack(expected)
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(first, expected, atol=1e-5, rtol=1e-4)


def test_the_methods_disagree_somewhere():
    model, batch = _random_model("bahdanau"), _batch()
    grad = saliency_maps(model, batch.src, batch.src_lengths, _targets(batch), "gradient")
    ixg = saliency_maps(model, batch.src, batch.src_lengths, _targets(batch), "input_x_gradient")
    assert not torch.allclose(grad[0], ixg[0], atol=1e-3)


def test_the_models_mode_and_backend_are_restored():
    model, batch = _random_model("bahdanau"), _batch()
    model.train()
    model.set_backend(resolve("fused", torch.device("cpu")))
    saliency_maps(model, batch.src, batch.src_lengths, _targets(batch))
    assert model.training and model.backend.name == "fused"


def test_bad_arguments_are_refused():
    model, batch = _random_model("bahdanau"), _batch()
    with pytest.raises(ValueError, match="unknown saliency method 'lime'"):
        saliency_maps(model, batch.src, batch.src_lengths, _targets(batch), "lime")
    with pytest.raises(ValueError, match="1 targets for a batch of 2"):
        saliency_maps(model, batch.src, batch.src_lengths, [[4]])


def test_gradient_saliency_matches_finite_differences_of_the_embeddings():
    """The sequential Jacobian by central differences in float64: perturb each source position's
    embedding along each axis, watch the log-probability of each output token move."""
    model, batch = _random_model("luong-general"), _batch()
    model = model.double()
    src, lengths, target = batch.src[1:], batch.src_lengths[1:], _targets(batch)[1]
    (first,) = saliency_maps(model, src, lengths, [target])
    emb = model.encoder.embed
    delta = torch.zeros(1, src.size(1), emb.embedding_dim, dtype=torch.float64)
    handle = emb.register_forward_hook(lambda _, __, out: out + delta)
    tgt_in = torch.tensor([[BOS_ID, *target]])
    tgt_out = torch.tensor([[*target, EOS_ID]])

    def log_probs() -> torch.Tensor:  # (T,) log p of each forced output token
        with torch.no_grad():
            logits, _ = model(src, lengths, tgt_in)
        return torch.log_softmax(logits, -1)[0].gather(1, tgt_out[0, :, None]).squeeze(1)

    h, s = 1e-6, int(lengths[0])
    grads = torch.zeros(len(target) + 1, s, emb.embedding_dim, dtype=torch.float64)
    try:
        model.eval()
        for i in range(s):
            for d in range(emb.embedding_dim):
                delta.zero_()
                delta[0, i, d] = h
                up = log_probs()
                delta[0, i, d] = -h
                grads[:, i, d] = (up - log_probs()) / (2 * h)
    finally:
        handle.remove()
    expected = grads.norm(dim=-1)
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(first.double(), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("method", METHODS)
def test_a_transformer_is_explained_like_an_rnn(method):
    from attnkit.models.transformer import Transformer, TransformerConfig

    torch.manual_seed(0)
    cfg = TransformerConfig(
        embedding_dim=16, encoder_layers=1, decoder_layers=1, heads=2, ff_dim=32, dropout=0.0
    )
    model = Transformer(cfg, 20, 20).eval()
    batch = _batch()
    maps = saliency_maps(model, batch.src, batch.src_lengths, _targets(batch), method, steps=4)
    for row, m in enumerate(maps):
        t, s = len(_targets(batch)[row]) + 1, int(batch.src_lengths[row])
        assert m.shape == (t, s) and bool((m >= 0).all())
        torch.testing.assert_close(m.sum(-1), torch.ones(t))


def _lookup_model(seed: int, sharpness: float = 20.0):
    """A Luong-general model built by hand so that its attention and its saliency must agree.

    Every token k is embedded as 3 e_k (a one-hot code). Both GRUs forget their past (update
    gate closed: bias -30; no recurrent weights), so encoder state h_i = tanh(3 e_{x_i}) holds
    source token i alone, and decoder state h_t = tanh(3 e_{y_(t-1)}) holds the previous output
    alone. The bridge is zero and input feeding off, so the source reaches the output only
    through step t's context. W_a = ``sharpness`` I: step t attends to the source position
    holding y_(t-1), with a score margin of ~``sharpness`` over every other position.

    Through that one path, d log p / d h_i = alpha_i (g + (g . (h_i - c)) W_a^T h_t), with
    g = d log p / d c the gradient at the context c: proportional to alpha_i, so where alpha is
    (near) one-hot the gradient saliency must peak at the same position. Combine and output layers
    stay random (``seed``)."""
    torch.manual_seed(seed)
    width = 16
    cfg = Seq2SeqConfig(
        attention="luong-general",
        decoder="luong",
        embedding_dim=width,
        encoder_hidden=width,
        bidirectional=False,
        decoder_hidden=width,
        input_feeding=False,
        dropout=0.0,
    )
    model = Seq2Seq(cfg, width, width).eval()
    with torch.no_grad():
        for embed in (model.encoder.embed, model.decoder.embed):
            embed.weight.copy_(3.0 * torch.eye(width))
            embed.weight[PAD_ID] = 0.0
        for rnn in (model.encoder.rnn, model.decoder.rnn):
            rnn.weight_hh_l0.zero_()
            rnn.bias_hh_l0.zero_()
            rnn.weight_ih_l0.zero_()
            rnn.weight_ih_l0[2 * width :] = torch.eye(width)  # candidate n = tanh(x)
            rnn.bias_ih_l0.zero_()
            rnn.bias_ih_l0[width : 2 * width] = -30.0  # update gate z ~ 0: h = n
        model.decoder.bridge.weight.zero_()
        model.decoder.bridge.bias.zero_()
        model.decoder.attention.key_proj.weight.copy_(sharpness * torch.eye(width))
    return model


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("method", METHODS)
def test_attention_and_saliency_agree_where_the_source_passes_only_through_attention(seed, method):
    from attnkit.evaluation.agreement import argmax_agreement

    model = _lookup_model(seed)
    source = [9, 4, 12, 7, 5, 14, 10]  # distinct tokens: each step attends somewhere else
    target = [4, 12, 7, 5, 14]  # y_(t-1) for steps 1..5 sits at source positions 1..5
    src = torch.tensor([[*source, EOS_ID]])
    lengths = torch.tensor([len(source) + 1])
    tgt_in = torch.tensor([[BOS_ID, *target]])
    with torch.no_grad():
        _, weights = model(src, lengths, tgt_in)
    attention = weights[0]  # (T, S)
    (saliency,) = saliency_maps(model, src, lengths, [target], method)
    # step 0 reads <s>, found nowhere in the source: its attention is flat and not compared
    peaked = attention.max(-1).values > 0.99
    assert peaked.tolist() == [False] + [True] * len(target)
    assert attention[peaked].argmax(-1).tolist() == [1, 2, 3, 4, 5]  # a row shift would show
    assert argmax_agreement([(attention[peaked].numpy(), saliency[peaked].numpy())]) == 100.0
    if method != "integrated_gradients":  # its path from zero crosses unsharp attention
        # not a near tie: the attended position holds most of each saliency row
        assert bool((saliency[peaked].max(-1).values > 0.5).all())


def test_integrated_gradients_are_the_same_whatever_steps_share_a_pass(monkeypatch):
    from attnkit.explain import saliency as module

    model, batch = _random_model("luong-general"), _batch()
    args = (model, batch.src, batch.src_lengths, _targets(batch), "integrated_gradients", 8)
    together = saliency_maps(*args)  # all 8 steps of both inputs in one pass
    monkeypatch.setattr(module, "MAX_IG_ROWS", 1)  # one step per pass
    for a, b in zip(together, saliency_maps(*args)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("method", ["gradient", "input_x_gradient"])
@pytest.mark.parametrize("rows", [1, 6, 4096])
def test_gradient_maps_are_the_same_whatever_steps_share_a_pass(monkeypatch, method, rows):
    from attnkit.explain import saliency as module

    model, batch = _random_model("bahdanau"), _batch()
    args = (model, batch.src, batch.src_lengths, _targets(batch), method)
    monkeypatch.setattr(module, "MAX_GRADIENT_ROWS", 4096)  # every step of both inputs at once
    together = saliency_maps(*args)
    monkeypatch.setattr(module, "MAX_GRADIENT_ROWS", rows)  # 1: a step a pass; 6: steps 0-2, then 3
    for a, b in zip(together, saliency_maps(*args), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
