"""``model.attention_impl``: the Transformer computes with each implementation of the registry.
The exact ones give the loss and gradients of ``explicit``; every one decodes with its key cache as
its full forward does; a config without the key is today's model, and a checkpoint loads under any
implementation."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnkit.accel.backend import resolve
from attnkit.attention.implementations import IMPLEMENTATIONS, build_implementation
from attnkit.checkpoint import write_checkpoint
from attnkit.checkpoint.weights import load_model_state
from attnkit.config import check_applicable
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.errors import ConfigError
from attnkit.models.architectures import model_config_from_dict
from attnkit.models.transformer import Transformer, TransformerConfig

CPU = torch.device("cpu")
SRC_V, TGT_V = 13, 11
#: the registry's exact implementations
EXACT = [name for name in IMPLEMENTATIONS if build_implementation(name, 8).exact]
KNOBS = dict(attention_window=2, global_tokens=1, random_features=32, attention_chunk=2)


def _model(impl: str, seed: int = 0, backend: str = "fused", **overrides) -> Transformer:
    torch.manual_seed(seed)
    settings = dict(
        embedding_dim=32, encoder_layers=2, decoder_layers=2, heads=4, ff_dim=48, dropout=0.0
    )
    cfg = TransformerConfig(**{**settings, "attention_impl": impl, **KNOBS, **overrides})
    model = Transformer(cfg, SRC_V, TGT_V)
    model.set_backend(resolve(backend, CPU))
    return model


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (3, 7), generator=g)
    src[:, -1] = EOS_ID
    src[1, 4:] = PAD_ID
    src[1, 3] = EOS_ID
    tgt_in = torch.randint(4, TGT_V, (3, 6), generator=g)
    tgt_in[:, 0] = BOS_ID
    tgt_out = torch.randint(4, TGT_V, (3, 6), generator=g)
    return src, (src != PAD_ID).sum(1), tgt_in, tgt_out


def _loss_and_grads(model, batch):
    src, lengths, tgt_in, tgt_out = batch
    logits, _ = model(src, lengths, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, TGT_V), tgt_out.reshape(-1))
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("impl", ["auto", *EXACT])
def test_exact_implementations_give_explicits_loss_and_gradients(impl):
    batch = _batch(1)
    want_loss, want = _loss_and_grads(_model("explicit", 1).train(), batch)
    got_loss, got = _loss_and_grads(_model(impl, 1).train(), batch)
    torch.testing.assert_close(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    for name, grad in want.items():
        torch.testing.assert_close(got[name], grad, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_cached_decoding_equals_the_full_forward_for_every_implementation(impl):
    model = _model(impl, 2).eval()
    src, lengths, tgt_in, _ = _batch(2)
    full_logits, full_weights = model(src, lengths, tgt_in, need_weights=True)  # (B, L, H, T, S)
    memory, state = model.encode(src, lengths)
    for t in range(tgt_in.size(1)):
        logits, state, weights = model.decoder.step(tgt_in[:, t], state, memory)
        torch.testing.assert_close(logits, full_logits[:, t], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(weights, full_weights[:, :, :, t], rtol=1e-5, atol=1e-6)
    assert (full_weights[1, ..., 4:] == 0).all()  # padding: no weight
    sums = model.encoder_attention(src).sum(-1)  # (B, L, H, S) rows of the maps
    real = (src != PAD_ID)[:, None, None, :].expand_as(sums)
    torch.testing.assert_close(sums[real], torch.ones_like(sums[real]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_every_implementation_trains_with_dropout_and_loads_any_checkpoint(impl, tmp_path):
    model = _model(impl, 3, dropout=0.1).train()
    loss, grads = _loss_and_grads(model, _batch(3))
    assert torch.isfinite(loss) and all(torch.isfinite(g).all() for g in grads.values())
    # the implementations add no parameters: today's checkpoint loads under each of them
    assert model.state_dict().keys() == _model("auto").state_dict().keys()
    write_checkpoint(
        tmp_path / "c", "seq2seq", _model("auto", 4).state_dict(), {}, None, None, None
    )
    load_model_state(model, tmp_path / "c")


def test_local_leaves_cross_attention_to_the_default():
    model = _model("local")
    layer = model.decoder.layers[0]
    assert layer.self_attn.impl.name == "local" and layer.cross_attn.impl is None
    assert _model("linear").decoder.layers[0].cross_attn.impl.name == "linear"
    assert _model("auto").decoder.layers[0].self_attn.impl is None


def test_a_config_without_the_key_is_todays_model_and_bad_values_are_refused():
    cfg = model_config_from_dict({"arch": "transformer", "heads": 2, "embedding_dim": 8})
    assert cfg.attention_impl == "auto"
    with pytest.raises(
        ConfigError, match="model.attention_impl: 'flash' is not one of auto, "
    ) as e:
        model_config_from_dict({"arch": "transformer", "attention_impl": "flash"}, "f: model")
    assert "chunked" in str(e.value) and "performer" in str(e.value)
    given = {"arch": "transformer", "attention_window": 8}
    with pytest.raises(ConfigError, match="applies only to model.attention_impl local"):
        check_applicable(model_config_from_dict(given), given, "model")
    for key in ("attention_window", "random_features", "attention_chunk"):
        with pytest.raises(ConfigError, match=f"model.{key}: must be at least 1, got 0"):
            model_config_from_dict({"arch": "transformer", key: 0}, "f: model")
    local = model_config_from_dict({"arch": "transformer", "attention_impl": "local"})
    local.check_lengths(100, 50, "f: model")  # a window of 64 inside 100 positions
    with pytest.raises(ConfigError, match="model.attention_window: 64 is not smaller than"):
        local.check_lengths(40, 30, "f: model")
