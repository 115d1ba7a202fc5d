"""attnkit faithfulness and the API calls under it, on tiny untrained seq2seq checkpoints (the
command needs no skill): scores.json, report.html, the printed table, bad input."""

import json

import pytest
import torch

import attnkit
from attnkit.cli import main
from attnkit.data.tasks.registry import build_splits
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import Vocab
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.architectures import build_model

RNN = {"attention": "bahdanau", "embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16,
       "attention_dim": 8, "dropout": 0.0}  # fmt: skip
TRANSFORMER = {"arch": "transformer", "embedding_dim": 16, "encoder_layers": 2,
               "decoder_layers": 2, "heads": 2, "ff_dim": 32, "dropout": 0.0}  # fmt: skip
QUICK = ["--permutations", "4", "--adversarial-steps", "2", "--ig-steps", "2"]


def _checkpoint(root, model_cfg):
    data = {"task": "numbers", "languages": ["de"], "max_number": 99}
    cfg = experiment_from_dict({"data": data, "model": model_cfg, "decode": {"max_len_cap": 4}})
    splits = build_splits(cfg.data)
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in splits.train + splits.test)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in splits.train + splits.test)
    torch.manual_seed(0)
    model = build_model(cfg.model, len(src_vocab), len(tgt_vocab)).eval()
    directory = root / "best"
    Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu")).save(directory)
    return directory


@pytest.fixture(scope="module")
def rnn(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("rnn"), RNN)


@pytest.fixture(scope="module")
def transformer(tmp_path_factory):
    return _checkpoint(tmp_path_factory.mktemp("transformer"), TRANSFORMER)


def test_typed_inputs_write_scores_and_report(rnn, tmp_path, capsys):
    out = tmp_path / "faith"
    args = ["faithfulness", "--model", str(rnn), "dreiundzwanzig", "elf", "--out", str(out)]
    assert main(args + QUICK) == 0
    printed = capsys.readouterr().out
    assert "attention" in printed and "compr. AOPC" in printed and "report.html" in printed
    scores = json.loads((out / "scores.json").read_text())
    summary = scores["summary"]
    assert scores["model"] == str(rnn) and scores["family"] == "seq2seq"
    assert summary["examples"] == 2 and len(scores["examples"]) == 2
    assert set(summary["erasure"]) == {
        "attention", "gradient", "input_x_gradient", "integrated_gradients", "leave_one_out",
        "random",
    }  # fmt: skip
    assert summary["permutation"]["permutations"] == 4
    assert summary["adversarial"]["steps"] == 2
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page and "Rank agreement" in page


def test_the_first_items_of_the_test_split_and_json(transformer, tmp_path, capsys):
    out = tmp_path / "faith"
    args = ["faithfulness", "--model", str(transformer), "--count", "2", "--out", str(out)]
    assert main(args + QUICK + ["--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["examples"] == 2
    assert {"attention", "rollout", "flow"} <= set(summary["erasure"])
    assert summary["permutation"] is None  # a Transformer has no single attention to replace
    assert "rollout~leave_one_out" in summary["agreement"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--count", "0"], "--count must be between"),
        (["  "], "input 1 is empty"),
        (["elf", "--split", "test"], "not both"),
        (["elf", "--permutations", "-1"], "--permutations must be at least 0"),
    ],
)
def test_bad_input_is_one_line(rnn, tmp_path, capsys, extra, message):
    assert main(["faithfulness", "--model", str(rnn), "--out", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error:") and message in err and "\n" not in err


def test_the_api_and_rollout(transformer, tmp_path):
    model = attnkit.load(transformer)
    scores = model.faithfulness("elf", out=tmp_path, permutations=0, adversarial_steps=0,
                                ig_steps=2)  # fmt: skip
    assert scores.value == scores["summary"]["erasure"]["attention"]["aopc_comprehensiveness"]
    assert "compr. AOPC" in scores.table()
    scores.plot(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0
    maps = model.rollout("elf")
    t, s = len(maps["output_tokens"]), len(maps["source_tokens"])
    assert maps["rollout"].shape == maps["flow"].shape == (t, s)
    assert maps["encoder_rollout"].shape == (s, s)


def test_plot_draws_rollout_and_flow_beside_the_attention(transformer, rnn, tmp_path, capsys):
    for kind in ("rollout", "flow"):
        out = tmp_path / f"{kind}.png"
        assert (
            main(["plot", "--model", str(transformer), "elf", "--map", kind, "-o", str(out)]) == 0
        )
        assert out.stat().st_size > 0 and f"attention and {kind}" in capsys.readouterr().out
    args = ["plot", "--model", str(rnn), "elf", "--map", "flow", "-o", str(tmp_path / "x.png")]
    assert main(args) == 2
    assert "for Transformer models" in capsys.readouterr().err
