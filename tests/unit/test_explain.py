"""attnkit explain: attention beside saliency, written as pictures, records and scores."""

import json

import numpy as np
import pytest
import torch

from attnkit.cli import main
from attnkit.data.tasks.registry import build_splits
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import Vocab
from attnkit.experiment import experiment_from_dict
from attnkit.explain.report import argmax_agreement, explain_model
from attnkit.models.seq2seq import Seq2Seq
from attnkit.translator import Translator
from attnkit.viz import load_records

TINY = {
    "attention": "bahdanau",
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
}


@pytest.fixture(scope="module")
def numbers_checkpoint(tmp_path_factory):
    """An untrained German numbers model saved as a checkpoint (explain needs no skill)."""
    data = {"task": "numbers", "languages": ["de"], "max_number": 99}
    cfg = experiment_from_dict({"data": data, "model": TINY, "decode": {"max_len_cap": 6}})
    splits = build_splits(cfg.data)
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in splits.train + splits.test)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in splits.train + splits.test)
    torch.manual_seed(0)
    model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab)).eval()
    translator = Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu"))
    directory = tmp_path_factory.mktemp("numbers") / "best"
    translator.save(directory)
    return directory


def test_the_references_of_a_split_are_explained_and_scored_against_gold(
    numbers_checkpoint, tmp_path
):
    scores = explain_model(
        numbers_checkpoint, split="test", count=3, reference=True, out_dir=tmp_path
    )
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["000.png", "001.png", "002.png"]
    attention, saliency = (
        load_records(tmp_path / "attention.json"),
        load_records(tmp_path / "saliency.json"),
    )
    assert len(attention) == len(saliency) == 3
    for a, s in zip(attention, saliency):
        assert a.output == a.reference  # forced along the reference
        assert a.weights.shape == s.weights.shape
        np.testing.assert_allclose(s.weights.sum(1), 1.0, atol=1e-5)
    # the gold links of every reference exist: both maps are scored against them
    for side in ("attention", "saliency"):
        assert scores[side]["examples"] == 3 and 0.0 <= scores[side]["aer"] <= 100.0
    assert scores["explained"] == "reference"
    assert json.loads((tmp_path / "scores.json").read_text())["method"] == "gradient"


def test_typed_inputs_through_the_cli(numbers_checkpoint, tmp_path, capsys):
    out = tmp_path / "x"
    argv = ["explain", "--model", numbers_checkpoint, "siebenundneunzig", "elf", "--out", out]
    assert main([str(a) for a in argv + ["--format", "svg", "--method", "input_x_gradient"]]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["examples"] == 2 and printed["method"] == "input_x_gradient"
    assert (out / "000.svg").is_file() and (out / "001.svg").is_file()


@pytest.mark.parametrize(
    "extra, needle",
    [
        ([], "give inputs to explain, or --split"),
        (["elf", "--split", "test"], "give inputs to explain, or --split"),
        (["elf", "--reference"], "--reference needs --split"),
        (["--split", "test", "--count", "0"], "--count must be between 1 and"),
    ],
)
def test_bad_requests_are_one_line_errors(numbers_checkpoint, capsys, extra, needle):
    assert main(["explain", "--model", str(numbers_checkpoint), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error:") and needle in err and "\n" not in err


def test_argmax_agreement():
    a = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    b = np.array([[0.6, 0.4], [0.7, 0.3], [0.5, 0.5]])
    assert argmax_agreement([(a, b)]) == pytest.approx(200 / 3, abs=0.01)
    assert argmax_agreement([(a, a)]) == 100.0
