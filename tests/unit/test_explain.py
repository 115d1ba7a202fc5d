"""attnkit explain: attention beside saliency, written as pictures, records and scores; and a
model without attention through every verb, whose pictures are its saliency."""

import json

import numpy as np
import pytest
import torch
import yaml
from tensorboard.backend.event_processing import event_accumulator

from attnkit.cli import main
from attnkit.data.tasks.registry import build_splits
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import Vocab
from attnkit.evaluation.agreement import argmax_agreement, rank_correlation
from attnkit.explain.no_attention import TITLE
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.explain_report import explain_model
from attnkit.families.seq2seq.report import evaluate_model
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.decoders import FixedContextDecoder
from attnkit.models.seq2seq import Seq2Seq
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
    # report.html: each example with both maps (the toggle) and the gold links outlined
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    data = json.loads(page.split('id="attnkit-data">')[1].split("</script>")[0])
    assert len(data["records"]) == 3
    for shown, a, s in zip(data["records"], attention, saliency):
        np.testing.assert_allclose(shown["weights"], a.weights, atol=1e-5)
        np.testing.assert_allclose(shown["saliency"], s.weights, atol=1e-5)
        assert shown["gold"]  # every reference of the numbers task has gold links


def test_typed_inputs_through_the_cli(numbers_checkpoint, tmp_path, capsys):
    out = tmp_path / "x"
    argv = ["explain", "--model", numbers_checkpoint, "siebenundneunzig", "elf", "--out", out]
    extra = ["--format", "svg", "--method", "input_x_gradient", "--json"]
    assert main([str(a) for a in argv + extra]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["examples"] == 2 and printed["method"] == "input_x_gradient"
    assert (out / "000.svg").is_file() and (out / "001.svg").is_file()


def test_explain_prints_a_short_table_and_where_it_wrote(numbers_checkpoint, tmp_path, capsys):
    out = tmp_path / "x"
    argv = ["explain", "--model", str(numbers_checkpoint), "elf", "zwölf", "--out", str(out)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 8 and not lines[0].startswith("{")
    assert lines[0].startswith("explained 2 input(s), forced along the model's own output")
    scores = json.loads((out / "scores.json").read_text())
    assert f"{scores['argmax_agreement']:.2f}% of steps" in lines[1]
    aer = next(line for line in lines if line.startswith("alignment error rate"))
    nan = float("nan")  # no gold link among the outputs: no AER
    want = [f"{scores[m].get('aer', nan):.2f}" for m in ("attention", "saliency")]
    assert aer.split()[-2:] == want
    assert lines[-1].startswith(f"written to {out}/: report.html")


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_one_input_drawn_to_one_file_with_o(numbers_checkpoint, tmp_path, capsys, suffix):
    picture = tmp_path / "deeper" / f"elf.{suffix}"
    argv = ["explain", "--model", str(numbers_checkpoint), "elf", "-o", str(picture)]
    assert main([*argv, "--method", "integrated-gradients", "--json"]) == 0  # hyphens work too
    printed = json.loads(capsys.readouterr().out)
    assert printed["picture"] == str(picture) and printed["examples"] == 1
    assert printed["method"] == "integrated_gradients" and "argmax_agreement" in printed
    head = picture.read_bytes()[:100]
    assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in picture.read_bytes()
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [picture.name]  # nothing else


def test_o_with_a_split_of_one(numbers_checkpoint, tmp_path, capsys):
    picture = tmp_path / "first.png"
    argv = ["explain", "--model", str(numbers_checkpoint), "--split", "test", "--count", "1"]
    assert main([*argv, "--reference", "-o", str(picture), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["saliency"]["examples"] == 1  # gold-scored
    assert picture.is_file()


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["elf", "zwölf", "-o", "x.png"], "-o FILE draws one input: give one TEXT"),
        (["--split", "test", "-o", "x.png"], "-o FILE draws one input"),
        (["elf", "-o", "x.gif"], "-o x.gif: give a .png or .svg file"),
        (["elf", "-o", "x.png", "--out", "d"], "-o FILE draws one picture and --out DIR"),
        (["elf", "-o", "x.png", "--format", "svg"], "--format is for --out; -o FILE takes"),
        (["elf", "-o", "x.png", "--pictures", "2"], "--pictures is for --out; -o FILE takes"),
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


def test_an_unknown_method_is_named_as_typed(numbers_checkpoint, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["explain", "--model", str(numbers_checkpoint), "elf", "--method", "saliency-map"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unknown saliency method 'saliency-map'; valid: gradient, input_x_gradient" in err


def test_argmax_agreement():
    a = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    b = np.array([[0.6, 0.4], [0.7, 0.3], [0.5, 0.5]])
    assert argmax_agreement([(a, b)]) == pytest.approx(200 / 3, abs=0.01)
    assert argmax_agreement([(a, a)]) == 100.0


# ---- a model without attention (model.attention: none) -------------------------------------
NO_ATTENTION_MODEL = {
    "attention": "none",
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "dropout": 0.0,
}


@pytest.fixture(scope="module")
def trained_none(tmp_path_factory):
    """A model without attention trained for 2 epochs by ``attnkit train`` on German numbers
    (gold alignments exist); returns its run directory."""
    tmp = tmp_path_factory.mktemp("none")
    cfg = {
        "name": "none",
        "data": {"task": "numbers", "languages": ["de"], "max_number": 99},
        "model": NO_ATTENTION_MODEL,
        "train": {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01},
        "decode": {"beam_size": 2, "max_len_cap": 6},
    }
    (tmp / "exp.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["train", str(tmp / "exp.yaml"), "--output-dir", str(tmp / "run")]) == 0
    return tmp / "run"


def test_a_model_without_attention_round_trips_its_checkpoint(trained_none, tmp_path):
    loaded = Translator.load(trained_none / "best", "cpu")
    assert type(loaded.model.decoder) is FixedContextDecoder and not loaded.model.has_attention
    loaded.save(tmp_path / "copy")
    again = Translator.load(tmp_path / "copy", "cpu")
    for (name, a), (_, b) in zip(
        loaded.model.state_dict().items(), again.model.state_dict().items()
    ):
        assert torch.equal(a, b), name
    texts = ["siebenundneunzig", "elf"]
    assert [t.output for t in again.translate(texts, beam_size=2)] == [
        t.output for t in loaded.translate(texts, beam_size=2)
    ]


def test_training_without_attention_logs_no_attention_pictures(trained_none):
    logged = event_accumulator.EventAccumulator(
        str(trained_none / "tensorboard"), size_guidance={"scalars": 0, "images": 0}
    )
    logged.Reload()
    assert "dev/exact_match" in logged.Tags()["scalars"]
    assert logged.Tags()["images"] == []


def test_plot_draws_the_saliency_and_says_there_is_no_attention(trained_none, tmp_path, capsys):
    svg = tmp_path / "map.svg"
    assert main(["plot", "--model", str(trained_none / "best"), "elf", "-o", str(svg)]) == 0
    assert "saliency (the model has no attention)" in capsys.readouterr().out
    assert TITLE in svg.read_text()  # SVG text stays text


def test_explain_without_attention_draws_and_scores_saliency_alone(trained_none, tmp_path):
    scores = explain_model(
        trained_none / "best",
        split="test",
        count=3,
        reference=True,
        out_dir=tmp_path,
        image_format="svg",
    )
    assert not (tmp_path / "attention.json").exists()
    saliency = load_records(tmp_path / "saliency.json")
    assert len(saliency) == 3 and all(s.output == s.reference for s in saliency)
    for s in saliency:
        np.testing.assert_allclose(
            s.weights.sum(1), 1.0, atol=1e-4
        )  # weights rounded to 5 decimals in JSON
    assert scores["attention"] == "none" and "argmax_agreement" not in scores
    assert 0.0 <= scores["saliency"]["aer"] <= 100.0  # the references' gold links exist
    assert TITLE in (tmp_path / "000.svg").read_text()


def test_evaluate_without_attention_scores_no_attention(trained_none, tmp_path):
    scores = evaluate_model(trained_none / "best", "test", beam=2, out_dir=tmp_path, device="cpu")
    assert scores["attention"] == "none" and "alignment" not in scores
    assert scores["greedy"]["items"] == scores["beam2"]["items"] == 10
    assert not (tmp_path / "attention.json").exists()
    saliency = load_records(tmp_path / "saliency.json")
    assert len(saliency) == 10
    for s in saliency:  # each row is a saliency map, not the decoder's zero weights
        assert s.weights.shape == (len(s.output_tokens), len(s.source_tokens))
        np.testing.assert_allclose(
            s.weights.sum(1), 1.0, atol=1e-4
        )  # weights rounded to 5 decimals in JSON
    page = (tmp_path / "report.html").read_text()
    assert "This model has no attention" in page and f'alt="{TITLE}"' in page


def test_translate_refuses_to_write_attention_it_does_not_have(trained_none, tmp_path, capsys):
    out = tmp_path / "a.json"
    argv = ["translate", "--model", str(trained_none / "best"), "elf", "--attention-out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error: --attention-out") and "\n" not in err
    assert "has no attention" in err and not out.exists()


def test_rank_correlation_of_maps():
    a = np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])
    assert rank_correlation([(a, a)]) == 1.0
    assert rank_correlation([(a, a[:, ::-1])]) == -1.0
    flat = np.full((2, 3), 1 / 3)  # constant rows have no rank correlation
    assert rank_correlation([(a, flat)]) is None
    ties = np.array([[0.2, 0.2, 0.6]])  # tied values share their mean rank
    assert rank_correlation([(ties, np.array([[0.1, 0.3, 0.6]]))]) == pytest.approx(0.866, abs=1e-3)
