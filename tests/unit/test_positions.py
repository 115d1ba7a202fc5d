"""The Transformer's positional encodings (``model.positional``): each trains and round-trips a
checkpoint, a learned table has its configured shape and is checked against the file and its
cap, ``none`` leaves the encoder permutation-equivariant, sequences past a learned table are one
line (decoding stops at its end), and checkpoints written before the choice load as
sinusoidal."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import attnkit
from attnkit import checkpoint as ckpt
from attnkit.checkpoint.validate import build_checked
from attnkit.data.vocab import BOS_ID, EOS_ID
from attnkit.errors import AttnkitError, CheckpointError, ConfigError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.models.architectures import build_model, model_config_from_dict
from attnkit.models.positions import POSITIONAL, LearnedPositions, SinusoidalPositions
from attnkit.size_caps import check_sizes

SRC_V, TGT_V, D = 13, 11, 16
OLD = Path(__file__).resolve().parents[1] / "data" / "checkpoints_5afbdd1" / "transformer"
TABLES = ("encoder.embeddings.positions.table.weight", "decoder.embeddings.positions.table.weight")


def _section(positional: str, **extra) -> dict:
    return {
        "arch": "transformer",
        "embedding_dim": D,
        "ff_dim": 24,
        "heads": 2,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "dropout": 0.0,
        "positional": positional,
        **extra,
    }


def _model(positional: str, seed: int = 0, **extra):
    torch.manual_seed(seed)
    cfg = model_config_from_dict(_section(positional, **extra))
    return cfg, build_model(cfg, SRC_V, TGT_V)


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, SRC_V, (4, 7), generator=g)
    src[:, -1] = EOS_ID
    tgt = torch.randint(4, TGT_V, (4, 6), generator=g)
    tgt_in = torch.cat([torch.full((4, 1), BOS_ID), tgt], 1)
    tgt_out = torch.cat([tgt, torch.full((4, 1), EOS_ID)], 1)
    return src, torch.full((4,), 7), tgt_in, tgt_out


@pytest.mark.parametrize("positional", list(POSITIONAL))
def test_each_kind_trains_a_step_and_round_trips_a_checkpoint(positional, tmp_path):
    cfg, model = (
        _model(positional, max_positions=20) if positional == "learned" else _model(positional)
    )
    before = {k: v.clone() for k, v in model.state_dict().items()}
    src, lengths, tgt_in, tgt_out = _batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    logits, _ = model(src, lengths, tgt_in)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, TGT_V), tgt_out.reshape(-1))
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    state = model.state_dict()
    tables = [k for k in state if "positions" in k]
    if positional == "learned":  # one trained table per stack, of the configured shape
        assert sorted(tables) == sorted(TABLES)
        for key in TABLES:
            assert state[key].shape == (20, D)
            assert not torch.equal(state[key], before[key])  # the step reached the table
    else:  # nothing saved: a function, or nothing at all
        assert tables == []
    model.eval()
    want, _ = model(src, lengths, tgt_in)
    ckpt.write_checkpoint(tmp_path / "c", "seq2seq", state, {}, None, None, None)
    again = build_checked(tmp_path / "c", lambda: build_model(cfg, SRC_V, TGT_V)).eval()
    torch.testing.assert_close(again(src, lengths, tgt_in)[0], want)


def test_a_learned_table_is_checked_against_the_file_and_its_cap(tmp_path):
    cfg, model = _model("learned", max_positions=20)
    ckpt.write_checkpoint(tmp_path / "c", "seq2seq", model.state_dict(), {}, None, None, None)
    longer = model_config_from_dict(_section("learned", max_positions=30))
    with pytest.raises(CheckpointError, match=r"positions.table.weight has shape \(20, 16\)"):
        build_checked(tmp_path / "c", lambda: build_model(longer, SRC_V, TGT_V))
    fixed = model_config_from_dict(_section("sinusoidal"))
    with pytest.raises(CheckpointError, match=r"unexpected decoder.embeddings.positions.table"):
        build_checked(tmp_path / "c", lambda: build_model(fixed, SRC_V, TGT_V))
    with pytest.raises(CheckpointError, match=r"model.max_positions: 70000 is above the cap"):
        check_sizes({"model": {"max_positions": 70_000}}, "c/config.yaml")
    check_sizes({"model": {"max_positions": 4096}}, "c/config.yaml")


def _encoded(model, src):
    model.eval()
    with torch.no_grad():
        memory, _ = model.encode(src, torch.full((src.size(0),), src.size(1)))
    return memory.states  # (B, S, D)


def test_without_positions_the_encoder_is_permutation_equivariant():
    src, *_ = _batch(3)
    order = torch.tensor([4, 0, 6, 2, 1, 5, 3])
    _, none = _model("none", 3)
    states = _encoded(none, src)
    torch.testing.assert_close(_encoded(none, src[:, order]), states[:, order])
    for positional in ("sinusoidal", "learned"):  # order now changes what each token encodes
        _, model = _model(positional, 3)
        states = _encoded(model, src)
        assert not torch.allclose(_encoded(model, src[:, order]), states[:, order], atol=1e-3)


def test_a_sequence_past_the_learned_table_is_one_line():
    _, model = _model("learned", max_positions=8)
    src = torch.full((1, 9), 5)
    with pytest.raises(AttnkitError, match=r"^a sequence of 9 tokens .*model.max_positions: 8\)"):
        model.encode(src, torch.tensor([9]))
    _, fixed = _model("sinusoidal")  # a function: any length has positions
    assert _encoded(fixed, torch.full((1, 600), 5)).shape == (1, 600, D)


def test_the_config_keys_are_checked_in_one_line():
    data = {"task": "numbers", "languages": ["de"], "max_number": 99}
    with pytest.raises(ConfigError, match=r"model.positional: 'rotary' is not one of"):
        model_config_from_dict(_section("rotary"), "f.yaml: model")
    with pytest.raises(ConfigError, match=r"model.max_positions: must be at least 1"):
        model_config_from_dict(_section("learned", max_positions=0), "f.yaml: model")
    with pytest.raises(ConfigError, match=r"model.max_positions: applies only to model.posi"):
        experiment_from_dict(
            {"data": data, "model": _section("sinusoidal", max_positions=64)}, user=True
        )
    with pytest.raises(ConfigError, match=r"model.max_positions: 64 learned .* at least 101"):
        experiment_from_dict({"data": data, "model": _section("learned", max_positions=64)})
    short = {**data, "max_src_len": 40, "max_tgt_len": 39}
    cfg = experiment_from_dict({"data": short, "model": _section("learned", max_positions=40)})
    assert (cfg.model.positional, cfg.model.max_positions) == ("learned", 40)
    with pytest.raises(ConfigError, match=r"model.positional: not a key of arch rnn"):
        model_config_from_dict({"positional": "learned"}, "f.yaml: model")


def test_a_checkpoint_from_before_the_choice_loads_as_sinusoidal():
    saved = ckpt.read_config(OLD / "best")
    assert "positional" not in saved["model"] and "max_positions" not in saved["model"]
    cfg = experiment_from_dict(saved)
    assert cfg.model.positional == "sinusoidal"
    model = attnkit.load(OLD / "best", "cpu")
    transformer = model.translator.model
    assert isinstance(transformer.encoder.embeddings.positions, SinusoidalPositions)
    assert transformer.position_limit is None


def test_decoding_stops_at_the_end_of_a_learned_table(tmp_path):
    config = {
        "name": "p",
        "data": {"task": "numbers", "languages": ["de"], "max_number": 99, "max_src_len": 30},
        "model": _section("learned", max_positions=101),
        "train": {"epochs": 1, "batch_size": 64, "threads": 1, "progress": False},
        "decode": {"max_len_extra": 300, "max_len_cap": 300},
    }
    config["train"]["tensorboard"] = False
    run = attnkit.train(config, output_dir=tmp_path / "run")
    model = attnkit.load(run.best, "cpu")
    transformer = model.translator.model
    assert isinstance(transformer.decoder.embeddings.positions, LearnedPositions)
    assert transformer.encoder.embeddings.positions.table.weight.shape == (101, D)
    with torch.no_grad():  # </s> never wins: decoding runs until the limit
        transformer.decoder.output.bias[EOS_ID] = -1e9
    (t,) = model.translate(["neunundneunzig"])  # limit 2 x 15 + 300, capped at 300 -> 101
    assert len(t.output_tokens) == 101
