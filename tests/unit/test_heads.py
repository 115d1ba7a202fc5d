"""A Transformer through the commands: trained by ``attnkit train``, its per-layer/head attention
in translations, records (JSON, NPZ), ``plot --layer/--head/--grid`` and ``evaluate``'s per-head
alignment scores; and the map choice of :mod:`attnkit.viz.heads`."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml
from test_cli import _reversal_tsv

from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.evaluation.alignment import per_head_metrics
from attnkit.families.seq2seq.translator import Translator
from attnkit.viz import AttentionRecord, load_records
from attnkit.viz.heads import choose_map, map_title, plot_head_grid

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY_TRANSFORMER = {
    "arch": "transformer",
    "embedding_dim": 16,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "heads": 2,
    "ff_dim": 32,
    "dropout": 0.0,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny Transformer trained for 2 epochs by ``attnkit train``; its run directory."""
    tmp = tmp_path_factory.mktemp("transformer_cli")
    seen = _reversal_tsv(tmp / "train.tsv", 60, 1)
    seen = _reversal_tsv(tmp / "dev.tsv", 10, 2, seen)
    _reversal_tsv(tmp / "test.tsv", 10, 3, seen)
    cfg = {
        "name": "tiny",
        "data": {
            "task": "parallel",
            **{split: str(tmp / f"{split}.tsv") for split in ("train", "dev", "test")},
        },
        "model": TINY_TRANSFORMER,
        "train": {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01},
        "decode": {"beam_size": 2, "max_len_cap": 8},
    }
    (tmp / "exp.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["train", str(tmp / "exp.yaml"), "--output-dir", str(tmp / "run")]) == 0
    return tmp / "run"


def _record(t=3, layers=2, heads=3, s=4, seed=0) -> AttentionRecord:
    rng = np.random.default_rng(seed)
    per_head = rng.random((t, layers, heads, s))
    per_head /= per_head.sum(-1, keepdims=True)
    return AttentionRecord(
        "abc",
        list("abc") + ["</s>"],
        "xy",
        ["x", "y", "</s>"],
        per_head.mean((1, 2)),
        None,
        None,
        per_head,
    )


def test_choose_map_picks_a_head_a_layer_or_the_mean():
    record = _record()
    assert choose_map(record, None, None) is record
    np.testing.assert_allclose(choose_map(record, 2, 3).weights, record.heads[:, 1, 2])
    np.testing.assert_allclose(choose_map(record, 1, None).weights, record.heads[:, 0].mean(1))
    np.testing.assert_allclose(choose_map(record, None, 2).weights, record.heads[:, :, 1].mean(1))
    assert choose_map(record, 1, 1).heads is None
    assert map_title(2, None) == "layer 2, mean of its heads"
    with pytest.raises(AttnkitError, match="--layer 3: the model has layers 1 to 2"):
        choose_map(record, 3, None)
    with pytest.raises(AttnkitError, match="--head 0: the model has heads 1 to 3"):
        choose_map(record, None, 0)
    plain = AttentionRecord("a", ["a"], "b", ["b"], np.ones((1, 1)))
    with pytest.raises(AttnkitError, match="no layers of attention heads"):
        choose_map(plain, 1, None)
    with pytest.raises(AttnkitError, match="no layers of attention heads"):
        plot_head_grid(plain, None)


def test_head_grid_has_a_panel_per_layer_and_head(tmp_path):
    fig = plot_head_grid(_record(layers=2, heads=3), tmp_path / "grid.svg")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [f"layer {layer} · head {head}" for layer in (1, 2) for head in (1, 2, 3)]
    assert (tmp_path / "grid.svg").read_text().startswith("<?xml")


def test_record_heads_must_match_the_tokens():
    record = _record()
    with pytest.raises(ValueError, match=r"per-head weights have shape \(3, 2, 3, 5\)"):
        AttentionRecord(
            "abc",
            record.source_tokens,
            "xy",
            record.output_tokens,
            record.weights,
            None,
            None,
            np.zeros((3, 2, 3, 5)),
        )


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_translate_writes_every_head_into_the_records(run, tmp_path, capsys, suffix):
    out = tmp_path / f"attention{suffix}"
    assert (
        main(["translate", "--model", str(run / "best"), "abc", "--attention-out", str(out)]) == 0
    )
    (record,) = load_records(out)
    assert record.layers_and_heads == (2, 2)
    assert record.heads.shape == (len(record.output_tokens), 2, 2, len(record.source_tokens))
    np.testing.assert_allclose(record.heads.sum(-1), 1.0, atol=1e-4)
    np.testing.assert_allclose(record.weights, record.heads.mean((1, 2)), atol=1e-4)


def test_translator_keeps_heads_only_when_asked(run):
    translator = Translator.load(run / "best", "cpu")
    (plain,) = translator.translate(["abc"])
    (kept,) = translator.translate(["abc"], beam_size=2, n_best=2, heads=True)
    assert plain.heads is None
    assert kept.heads.shape[1:3] == (2, 2)
    assert all(option.heads is not None for option in kept.nbest)


@pytest.mark.parametrize(
    "options,title",
    [
        ([], None),
        (["--layer", "2"], "layer 2, mean of its heads"),
        (["--grid"], "layer 1 · head 1"),
    ],
)
def test_plot_draws_the_chosen_map(run, tmp_path, capsys, options, title):
    out = tmp_path / "map.svg"
    assert main(["plot", "--model", str(run / "best"), "abc", "-o", str(out), *options]) == 0
    text = out.read_text(encoding="utf-8")
    if title:
        assert title in text
    assert "heatmap:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "options,needle",
    [
        (["--layer", "5"], "--layer 5: the model has layers 1 to 2"),
        (["--head", "3"], "--head 3: the model has heads 1 to 2"),
        (["--grid", "--head", "1"], "--grid draws every layer and head"),
    ],
)
def test_plot_refuses_layers_and_heads_it_does_not_have(run, tmp_path, capsys, options, needle):
    out = tmp_path / "map.png"
    assert main(["plot", "--model", str(run / "best"), "abc", "-o", str(out), *options]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_evaluate_reports_the_transformer_and_its_backend(run, tmp_path, capsys):
    assert (
        main(
            ["evaluate", "--model", str(run / "best"), "--out", str(tmp_path), "--beam", "2"]
            + ["--data-dir", str(run.parent)]
        )
        == 0
    )
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["attention"] == "transformer"
    assert scores["backend"].startswith("backend:") and "Transformer" in scores["backend"]
    assert scores["greedy"]["items"] == 10 and "beam2" in scores
    # each example's rollout and flow, forced along its output, as explain/rollout.py makes them
    from attnkit.data.vocab import BOS_ID, EOS
    from attnkit.explain.rollout import transformer_maps

    translator = Translator.load(run / "best")
    records = load_records(tmp_path / "attention.json")
    assert records and all(r.rollout is not None and r.flow is not None for r in records)
    for rec in records[:3]:
        (example,), _ = translator.encode_sources([rec.source], warn=False)
        ended = rec.output_tokens[-1:] == [EOS]
        ids = translator.tgt_vocab.encode(rec.output_tokens[:-1] if ended else rec.output_tokens)
        src = torch.tensor([example.src])
        tgt_in = torch.tensor([[BOS_ID, *ids][: len(rec.output_tokens)]])
        want = transformer_maps(translator.model, src, tgt_in, encoder=False)
        np.testing.assert_allclose(rec.rollout, want["rollout"].numpy(), atol=1e-4)
        np.testing.assert_allclose(rec.flow, want["flow"].numpy(), atol=1e-4)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '"rollout": [[' in page and '"flow": [[' in page
    assert "attention rollout and flow through the encoder" in page


def test_per_head_metrics_rank_heads_by_their_own_alignment():
    """A head that looks where the gold links are beats one that looks elsewhere."""
    from attnkit.data.tasks.alignment import Alignment

    t, s = 3, 3
    heads = np.zeros((t, 1, 2, s))
    heads[:, 0, 0] = np.eye(3)  # head 1: the diagonal
    heads[:, 0, 1] = np.eye(3)[::-1]  # head 2: the anti-diagonal
    gold = Alignment.from_possible({(j, j) for j in range(3)})

    rows = per_head_metrics([SimpleNamespace(heads=heads)], [gold])
    assert [(r["layer"], r["head"]) for r in rows] == [(1, 1), (1, 2)]
    assert rows[0]["aer"] == 0.0 and rows[1]["aer"] > 50
