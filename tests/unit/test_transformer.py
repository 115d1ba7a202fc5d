"""The Transformer: incremental decoding equals the full forward, the fused path equals the explicit
one, masks hold, decoders and ensembles take it, it learns, and its checkpoints round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnkit.accel.backend import resolve
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding import beam_search, forced_decode, greedy_decode
from attnkit.decoding.ensemble import Ensemble
from attnkit.errors import ConfigError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.models.architectures import build_model, model_config_from_dict
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.models.transformer import Transformer, TransformerConfig, sinusoids

CPU = torch.device("cpu")
SRC_V, TGT_V = 13, 11


def _model(seed: int = 0, backend: str = "reference", **overrides) -> Transformer:
    torch.manual_seed(seed)
    settings = dict(
        embedding_dim=32, encoder_layers=2, decoder_layers=2, heads=4, ff_dim=48, dropout=0.0
    )
    cfg = TransformerConfig(**{**settings, **overrides})
    model = Transformer(cfg, SRC_V, TGT_V).eval()
    model.set_backend(resolve(backend, CPU))
    return model


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (3, 6), generator=g)
    src[:, -1] = EOS_ID
    src[1, 4:] = PAD_ID  # shorter rows: padding after their </s>
    src[1, 3] = EOS_ID
    src[2, 2:] = PAD_ID
    src[2, 1] = EOS_ID
    lengths = (src != PAD_ID).sum(1)
    tgt_in = torch.randint(4, TGT_V, (3, 5), generator=g)
    tgt_in[:, 0] = BOS_ID
    return src, lengths, tgt_in


@pytest.mark.parametrize("backend", ["reference", "fused"])
def test_cached_steps_equal_the_full_forward_at_every_step(backend):
    model = _model(1, backend)
    src, lengths, tgt_in = _batch(1)
    full_logits, full_weights = model(src, lengths, tgt_in, need_weights=True)  # (B, L, H, T, S)
    memory, state = model.encode(src, lengths)
    for t in range(tgt_in.size(1)):
        assert state.length == t
        logits, state, weights = model.decoder.step(tgt_in[:, t], state, memory)
        torch.testing.assert_close(logits, full_logits[:, t], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(weights, full_weights[:, :, :, t], rtol=1e-5, atol=1e-6)


def test_fused_training_forward_equals_the_explicit_one():
    src, lengths, tgt_in = _batch(2)
    reference, fused = _model(2, "reference"), _model(2, "fused")
    ref_logits, _ = reference(src, lengths, tgt_in)
    fused_logits, none = fused(src, lengths, tgt_in)
    assert none is None
    torch.testing.assert_close(fused_logits, ref_logits, rtol=1e-5, atol=1e-5)


def test_gradients_of_fused_and_explicit_paths_agree():
    src, lengths, tgt_in = _batch(3)
    grads = []
    for backend in ("reference", "fused"):
        model = _model(3, backend).train()
        logits, _ = model(src, lengths, tgt_in)
        logits.logsumexp(-1).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=1e-4, atol=1e-5, msg=name)


def test_padding_gets_zero_weight_and_later_tokens_never_reach_earlier_outputs():
    model = _model(4)
    src, lengths, tgt_in = _batch(4)
    logits, weights = model(src, lengths, tgt_in, need_weights=True)
    padded = (src == PAD_ID)[:, None, None, None, :].expand_as(weights)
    assert torch.count_nonzero(weights[padded]) == 0
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))
    changed = tgt_in.clone()
    changed[:, 3:] = 5  # only the last positions differ
    logits2, _ = model(src, lengths, changed)
    torch.testing.assert_close(logits2[:, :3], logits[:, :3])
    # more padding changes nothing: row 2 alone, without its padding, and inside a wider batch
    wider = torch.cat([src, torch.full((3, 4), PAD_ID)], 1)
    torch.testing.assert_close(model(wider, lengths, tgt_in)[0], logits, rtol=1e-5, atol=1e-6)
    alone, _ = model(src[2:, : int(lengths[2])], lengths[2:], tgt_in[2:])
    torch.testing.assert_close(alone, logits[2:], rtol=1e-5, atol=1e-6)


def test_beam_of_one_is_greedy_and_hypotheses_carry_every_layer_and_head():
    model = _model(5)
    src, lengths, _ = _batch(5)
    greedy = greedy_decode(model, src, lengths, 8, keep_heads=True)
    beam = beam_search(model, src, lengths, 8, beam_size=1, keep_heads=True)
    for g, (b,) in zip(greedy, beam):
        assert g.tokens == b.tokens
        assert g.score == pytest.approx(b.score, abs=1e-5)
        torch.testing.assert_close(g.weights, b.weights)
        torch.testing.assert_close(g.heads, b.heads)
    for hyp, length in zip(greedy, lengths.tolist()):
        rows = len(hyp.tokens) + (1 if hyp.finished else 0)
        assert hyp.heads.shape == (rows, 2, 4, length)
        torch.testing.assert_close(hyp.heads.sum(-1), torch.ones(rows, 2, 4))
        # the map shown by default is the mean over layers and heads
        torch.testing.assert_close(hyp.weights, hyp.heads.mean(dim=(1, 2)))
    assert all(h.heads is None for h in greedy_decode(model, src, lengths, 8))


def test_beam_hypotheses_carry_the_weights_forced_decoding_gives_their_tokens():
    model = _model(6)
    src, lengths, _ = _batch(6)
    nbest = beam_search(model, src, lengths, 8, beam_size=4, n_best=3, keep_heads=True)
    for row, hyps in enumerate(nbest):
        assert len(hyps) == 3
        for hyp in hyps:
            (forced,) = forced_decode(
                model, src[row : row + 1], lengths[row : row + 1], [hyp.tokens], keep_heads=True
            )
            n = len(hyp.tokens)  # rows of the tokens (forced decoding adds </s> after them)
            torch.testing.assert_close(forced.heads[:n], hyp.heads[:n], rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(forced.weights[:n], hyp.weights[:n], rtol=1e-5, atol=1e-6)
            if hyp.finished:
                assert forced.score == pytest.approx(hyp.score, abs=1e-4)


def test_ensembles_take_transformers_and_mix_them_with_rnns():
    src, lengths, _ = _batch(7)
    a, b = _model(7), _model(8)
    both = greedy_decode(Ensemble([a, b]), src, lengths, 6, keep_heads=True)
    assert both[0].heads.shape[1:3] == (2, 4)
    one = greedy_decode(Ensemble([a]), src, lengths, 6)
    alone = greedy_decode(a, src, lengths, 6)
    assert [h.tokens for h in one] == [h.tokens for h in alone]
    torch.manual_seed(0)
    rnn = Seq2Seq(Seq2SeqConfig(embedding_dim=8, encoder_hidden=8, decoder_hidden=8), SRC_V, TGT_V)
    mixed = beam_search(Ensemble([a, rnn.eval()]), src, lengths, 6, beam_size=2)
    for (hyp,), length in zip(mixed, lengths.tolist()):
        assert hyp.weights.shape[1] == length and hyp.heads is None


def test_positions_are_sinusoids_and_grow_past_the_table():
    table = sinusoids(4, 6)
    assert table[0, 0] == 0 and table[0, 1] == 1  # sin(0), cos(0)
    model = _model(9)
    long_src = torch.full((1, 600), 5)
    long_src[0, -1] = EOS_ID
    memory, _ = model.encode(long_src, torch.tensor([600]))
    assert memory.states.shape == (1, 600, 32) and torch.isfinite(memory.states).all()


def test_tied_output_reads_the_target_embeddings_and_its_checkpoint_round_trips(tmp_path):
    from attnkit.checkpoint import write_checkpoint
    from attnkit.checkpoint.weights import load_model_state

    model = _model(10, tie_output=True)
    untied = _model(10)
    count = sum(p.numel() for p in model.parameters())
    assert count == sum(p.numel() for p in untied.parameters()) - TGT_V * 32  # no output matrix
    src, lengths, tgt_in = _batch(10)
    before, _ = model(src, lengths, tgt_in)
    with torch.no_grad():
        model.decoder.embeddings.embed.weight[6] += torch.linspace(-1, 1, 32)  # moves its logit
    after, _ = model(src, lengths, tgt_in)
    assert not torch.allclose(before[..., 6], after[..., 6])
    write_checkpoint(tmp_path / "c", "seq2seq", model.state_dict(), {}, None, None, None)
    again = _model(11, tie_output=True)
    load_model_state(again, tmp_path / "c")
    torch.testing.assert_close(again(src, lengths, tgt_in)[0], after)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_tiny_transformer_learns_to_reverse(seed):
    """Reversal needs attention to the mirrored position: no attention, no learning."""
    torch.manual_seed(seed)
    model = _model(seed, "fused", embedding_dim=32, ff_dim=64, encoder_layers=1, decoder_layers=1)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)

    def batch(n):
        body = torch.randint(4, SRC_V, (n, 5), generator=g)
        src = torch.cat([body, torch.full((n, 1), EOS_ID)], 1)
        target = body.flip(1) % (TGT_V - 4) + 4
        tgt_in = torch.cat([torch.full((n, 1), BOS_ID), target], 1)
        tgt_out = torch.cat([target, torch.full((n, 1), EOS_ID)], 1)
        return src, torch.full((n,), 6), tgt_in, tgt_out

    for _ in range(300):
        src, lengths, tgt_in, tgt_out = batch(32)
        logits, _ = model(src, lengths, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, TGT_V), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    src, lengths, _, tgt_out = batch(100)
    hyps = greedy_decode(model, src, lengths, 8)
    exact = sum(h.tokens == row[:-1].tolist() for h, row in zip(hyps, tgt_out))
    assert exact >= 80, f"{exact}/100 reversed exactly"


def test_model_section_picks_its_architecture_and_names_foreign_keys():
    cfg = model_config_from_dict({"arch": "transformer", "heads": 2, "embedding_dim": 8})
    assert isinstance(cfg, TransformerConfig) and cfg.attention == "transformer"
    assert isinstance(model_config_from_dict({"attention": "luong-dot"}), Seq2SeqConfig)
    assert isinstance(build_model(cfg, 5, 6), Transformer)
    with pytest.raises(ConfigError, match=r"model.rnn: not a key of arch transformer \(its keys"):
        model_config_from_dict({"arch": "transformer", "rnn": "gru"}, "f.yaml: model")
    with pytest.raises(ConfigError, match="model.arch: 'lstm' is not one of rnn, transformer"):
        model_config_from_dict({"arch": "lstm"}, "f.yaml: model")
    with pytest.raises(ConfigError, match="model.embedding_dim: 10 is not divisible by"):
        model_config_from_dict(
            {"arch": "transformer", "embedding_dim": 10, "heads": 4}, "f.yaml: model"
        )
    with pytest.raises(ConfigError, match="model.decoder_layers: must be at least 1"):
        model_config_from_dict({"arch": "transformer", "decoder_layers": 0}, "f.yaml: model")
    with pytest.raises(ConfigError, match="model.ff_dim"):
        model_config_from_dict({"arch": "rnn", "ff_dim": 8}, "f.yaml: model")


def test_experiment_without_arch_is_the_rnn_and_saves_its_arch():
    cfg = experiment_from_dict({"data": {"task": "numbers"}})
    assert cfg.model.arch == "rnn"
    cfg = experiment_from_dict({"data": {"task": "numbers"}, "model": {"arch": "transformer"}})
    assert isinstance(cfg.model, TransformerConfig)


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "config", sorted(p.name for p in (REPO / "configs").glob("*transformer*.yaml"))
)
def test_every_shipped_transformer_config_builds_and_checkpoints(config, tmp_path):
    from attnkit.checkpoint import write_checkpoint
    from attnkit.checkpoint.weights import load_model_state
    from attnkit.families.seq2seq.config import load_experiment

    cfg = load_experiment(REPO / "configs" / config)
    assert isinstance(cfg.model, TransformerConfig)
    model = build_model(cfg.model, 40, 30)
    write_checkpoint(tmp_path / "c", "seq2seq", model.state_dict(), {}, None, None, None)
    load_model_state(build_model(cfg.model, 40, 30), tmp_path / "c")
