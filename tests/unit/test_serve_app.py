"""attnkit serve's API in process (FastAPI's TestClient): models, translate and its options, the
page, and the shape of every answer. The model is a tiny German numbers translator trained for a
few dozen steps here (the numbers task has gold alignments)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from attnkit.data.batching import Example, collate
from attnkit.data.tasks.gold import gold_aligner
from attnkit.data.tasks.registry import build_splits
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import BOS_ID, EOS, EOS_ID, Vocab
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.seq2seq import Seq2Seq
from attnkit.serve.app import ServeSettings, create_app
from attnkit.serve.models import model_name, model_names

TINY = {
    "attention": "bahdanau",
    "embedding_dim": 16,
    "encoder_hidden": 16,
    "decoder_hidden": 24,
    "attention_dim": 16,
    "dropout": 0.0,
}
INPUTS = ["dreiundzwanzig", "siebzehn", "neunundneunzig", "vier"]


def train_numbers_model(directory, steps: int = 150, attention: str = "bahdanau"):
    """A German numbers translator trained for ``steps`` Adam steps, saved to ``directory``."""
    data = {"task": "numbers", "languages": ["de"], "max_number": 99}
    cfg = experiment_from_dict(
        {
            "data": data,
            "model": {**TINY, "attention": attention},
            "decode": {"max_len_cap": 6, "batch_size": 16},
        }
    )
    splits = build_splits(cfg.data)
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in splits.train + splits.test)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in splits.train + splits.test)
    torch.manual_seed(0)
    model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab))
    examples = [
        Example(src_vocab.encode(tok.tokenize(s)) + [EOS_ID], tgt_vocab.encode(tok.tokenize(t)), i)
        for i, (s, t) in enumerate(splits.train)
    ]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        batch = collate([examples[(step * 32 + j) % len(examples)] for j in range(32)])
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), batch.tgt_out.reshape(-1), ignore_index=0
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    translator = Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu"))
    translator.save(directory)
    return directory


@pytest.fixture(scope="session")
def numbers_model(tmp_path_factory):
    """A checkpoint directory ``.../numbers/model/best`` (served as 'numbers')."""
    return train_numbers_model(tmp_path_factory.mktemp("serve") / "numbers" / "model" / "best")


@pytest.fixture(scope="module")
def client(numbers_model):
    app = create_app(ServeSettings(models=[numbers_model], max_wait_ms=1.0))
    with TestClient(app) as c:
        yield c


def _translate(client, **body):
    response = client.post("/v1/translate", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_health_and_the_models_list(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    (info,) = client.get("/v1/models").json()["models"]
    assert info["name"] == "numbers" and info["family"] == "seq2seq"
    assert info["task"] == "numbers" and info["attention"] == "bahdanau"
    assert info["has_attention"] is True and info["has_gold"] is True
    assert info["explain"] is True and info["layers"] is None and info["heads"] is None
    assert info["limits"]["max_chars"] == 500 and info["limits"]["max_beam"] == 10
    assert info["example"] == "siebenundneunzig"  # what the page opens with: a German model
    assert _translate(client, model="numbers", inputs=[info["example"]])["results"]


def test_a_greedy_translation_matches_the_translator(client, numbers_model):
    body = _translate(client, inputs=INPUTS)
    assert body["model"] == "numbers"
    expected = Translator.load(numbers_model, "cpu").translate(INPUTS)
    for text, result, t in zip(INPUTS, body["results"], expected):
        assert result["input"] == text
        assert result["source_tokens"] == list(text) + [EOS]
        (h,) = result["hypotheses"]
        assert h["output"] == t.output and h["tokens"] == t.output_tokens
        assert h["score"] == pytest.approx(t.score, abs=1e-4)
        weights = np.array(h["attention"])
        assert weights.shape == (len(h["tokens"]), len(result["source_tokens"]))
        np.testing.assert_allclose(weights, t.weights, atol=1e-5)
        assert h["layers"] is None
        assert result["saliency"] is None and result["gold"] is None
        assert len(h["top_k"]) == len(h["tokens"])
        for token, step in zip(h["tokens"], h["top_k"]):
            assert len(step) == 5 and step[0]["token"] == token
            assert sum(option["prob"] for option in step) <= 1.0 + 1e-5


def test_beam_n_best_and_no_top_k(client):
    (result,) = _translate(client, inputs=["achtundvierzig"], beam=4, n_best=3, top_k=0)["results"]
    hyps = result["hypotheses"]
    assert len(hyps) == 3 and len({h["output"] for h in hyps}) == 3
    assert all(h["top_k"] is None for h in hyps)


def test_a_prefix_starts_every_hypothesis(client):
    plain = _translate(client, inputs=["dreiundzwanzig"], top_k=1)["results"][0]["hypotheses"][0]
    first = plain["tokens"][0]
    other = "9" if first != "9" else "8"
    (result,) = _translate(client, inputs=["dreiundzwanzig"], prefix=[other], beam=2, n_best=2)[
        "results"
    ]
    for h in result["hypotheses"]:
        assert h["tokens"][0] == other and h["output"].startswith(other)
        assert len(h["attention"]) == len(h["tokens"])
        assert h["top_k"][0][0]["token"] == first  # the model still prefers its own first token
    same = _translate(client, inputs=["dreiundzwanzig"], prefix=plain["tokens"][:-1])
    again = same["results"][0]["hypotheses"][0]
    assert again["tokens"] == plain["tokens"]
    assert again["score"] == pytest.approx(plain["score"], abs=1e-4)


def test_explain_and_gold_links(client, numbers_model):
    (result,) = _translate(client, inputs=["dreiundzwanzig"], explain=True, gold=True)["results"]
    h = result["hypotheses"][0]
    saliency = np.array(result["saliency"])
    assert saliency.shape == np.array(h["attention"]).shape
    np.testing.assert_allclose(saliency.sum(1), 1.0, atol=1e-4)
    aligner = gold_aligner(Translator.load(numbers_model, "cpu").config.data)
    alignment = aligner("dreiundzwanzig", h["output"])
    if alignment is None:
        assert result["gold"] is None
    else:
        assert result["gold"] == sorted([list(link) for link in alignment.possible])
        assert all(0 <= j < len(h["output"]) for j, _ in result["gold"])


def test_the_page_and_docs_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "<" in page.text
    schema = client.get("/openapi.json").json()
    translate = schema["components"]["schemas"]["TranslateRequest"]["properties"]
    assert translate["beam"]["maximum"] == 10 and translate["top_k"]["maximum"] == 20
    assert client.get("/docs").status_code == 200


def test_the_page_loads_the_renderer_the_reports_inline(client):
    """One heatmap renderer: the file viz/ owns (report.html inlines it) is what the page gets."""
    from importlib import resources

    page = client.get("/").text
    assert '<script src="static/heatmap.js">' in page
    served = client.get("/static/heatmap.js")
    renderer = resources.files("attnkit") / "viz" / "static" / "heatmap.js"
    assert served.status_code == 200 and "javascript" in served.headers["content-type"]
    assert served.text == renderer.read_text(encoding="utf-8") and "AttnkitHeatmap" in served.text
    assert client.get("/static/app.js").status_code == 200  # the page's own scripts still served


def test_model_names_from_paths(tmp_path):
    assert model_name(tmp_path / "runs" / "demo" / "model" / "best") == "demo"
    assert model_name(tmp_path / "runs" / "demo" / "last") == "demo"
    dirs = [tmp_path / "a" / "best", tmp_path / "x" / "a" / "last", tmp_path / "b"]
    assert model_names(dirs, []) == ["a", "a-2", "b"]
    assert model_names(dirs, ["one"]) == ["one", "a", "b"]


def test_two_models_by_name(numbers_model, tmp_path):
    other = train_numbers_model(tmp_path / "plain" / "best", steps=5, attention="none")
    app = create_app(ServeSettings(models=[numbers_model, other]))
    with TestClient(app) as c:
        names = [m["name"] for m in c.get("/v1/models").json()["models"]]
        assert names == ["numbers", "plain"]
        body = _translate(c, model="plain", inputs=["vier"])
        assert body["model"] == "plain"
        assert not np.array(body["results"][0]["hypotheses"][0]["attention"]).any()
        info = c.get("/v1/models").json()["models"][1]
        assert info["attention"] == "none" and info["has_attention"] is False


def test_the_command_line_makes_the_settings(tmp_path):
    from attnkit.cli import build_parser
    from attnkit.serve.options import settings_from_args

    argv = ["serve", "--model", "a/best", "--model", "b", "--name", "x", "--max-beam", "4"]
    settings = settings_from_args(build_parser().parse_args([*argv, "--decode-seconds", "2.5"]))
    assert settings.models == [Path("a/best"), Path("b")] and settings.names == ["x"]
    assert settings.limits.max_beam == 4 and settings.limits.decode_seconds == 2.5
    assert (settings.host, settings.port, settings.max_batch) == ("127.0.0.1", 8000, 32)
    off = settings_from_args(build_parser().parse_args([*argv, "--no-batching"]))
    assert (off.max_batch, off.max_wait_ms) == (1, 0.0)


def test_serve_errors_are_one_line(capsys, tmp_path):
    from attnkit.cli import main

    assert main(["serve", "--model", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnkit: error: ") and "missing" in err and "Traceback" not in err
    assert main(["serve", "--model", str(tmp_path), "--max-chars", "0"]) == 2
    assert "--max-chars must be > 0" in capsys.readouterr().err


def tiny_transformer(directory: Path, encoder_layers: int = 1) -> Path:
    """An untrained two-layer, two-head Transformer over German number words, saved."""
    from attnkit.models.architectures import build_model

    cfg = experiment_from_dict(
        {
            "data": {"task": "numbers", "languages": ["de"], "max_number": 99},
            "model": {
                "arch": "transformer",
                "embedding_dim": 8,
                "encoder_layers": encoder_layers,
                "decoder_layers": 2,
                "heads": 2,
                "ff_dim": 8,
                "dropout": 0.0,
            },
            "decode": {"max_len_cap": 5},
        }
    )
    tok, vocab = CharTokenizer(), Vocab.build([list("abcdefghijklmnopqrstuvwxyzäöüß0123456789")])
    torch.manual_seed(0)
    model = build_model(cfg.model, len(vocab), len(vocab)).eval()
    Translator(model, cfg, tok, tok, vocab, vocab, torch.device("cpu")).save(directory)
    return directory


def test_a_transformer_sends_every_layer_and_head(tmp_path):
    directory = tiny_transformer(tmp_path / "tiny-transformer" / "best")
    with TestClient(create_app(ServeSettings(models=[directory]))) as c:
        (info,) = c.get("/v1/models").json()["models"]
        assert (info["attention"], info["layers"], info["heads"]) == ("transformer", 2, 2)
        for body in ({"inputs": ["vier"], "beam": 2}, {"inputs": ["vier"], "prefix": ["4"]}):
            (result,) = _translate(c, **body)["results"]
            h = result["hypotheses"][0]
            layers, attention = np.array(h["layers"]), np.array(h["attention"])
            assert layers.shape == (len(h["tokens"]), 2, 2, len(result["source_tokens"]))
            np.testing.assert_allclose(layers.mean(axis=(1, 2)), attention, atol=1e-5)
            assert result["rollout"] is None and result["flow"] is None  # not asked


def test_a_transformers_rollout_and_flow_are_explain_rollouts(tmp_path, numbers_model):
    """rollout: true answers the maps explain/rollout.py makes of the first output, forced along
    it; flow above --max-flow-work is left out with a line saying why; an RNN is refused."""
    from attnkit.explain.rollout import transformer_maps
    from attnkit.families.serving import Limits

    directory = tiny_transformer(tmp_path / "tiny-transformer" / "best", encoder_layers=2)
    translator = Translator.load(directory)
    body = {"inputs": ["dreiundzwanzig", "vier"], "beam": 2, "rollout": True}
    with TestClient(create_app(ServeSettings(models=[directory]))) as c:
        results = _translate(c, **body)["results"]
    for text, result in zip(body["inputs"], results):
        tokens = result["hypotheses"][0]["tokens"]  # "</s>" last when the output ended
        ended = tokens[-1:] == [EOS]
        src = torch.tensor(
            [translator.src_vocab.encode(translator.src_tokenizer.tokenize(text)) + [EOS_ID]]
        )
        ids = translator.tgt_vocab.encode(tokens[:-1] if ended else tokens)
        tgt_in = torch.tensor([[BOS_ID, *ids][: len(tokens)]])
        want = transformer_maps(translator.model, src, tgt_in, encoder=False)
        for name in ("rollout", "flow"):
            got = np.array(result[name])
            assert got.shape == (len(tokens), len(result["source_tokens"]))
            np.testing.assert_allclose(got, want[name].numpy(), atol=1e-5)
        assert result["flow_note"] is None
        assert not np.allclose(result["rollout"], result["hypotheses"][0]["attention"], atol=1e-3)
    settings = ServeSettings(models=[directory, numbers_model], limits=Limits(max_flow_work=10))
    with TestClient(create_app(settings)) as c:
        (result,) = _translate(c, inputs=["vier"], rollout=True)["results"]
        assert result["flow"] is None and result["rollout"] is not None
        assert "flow: not computed" in result["flow_note"] and "10" in result["flow_note"]
        refused = c.post("/v1/translate", json={"model": "numbers", "inputs": ["vier"],
                                                "rollout": True})  # fmt: skip
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "rollout"
        assert "Transformer" in refused.json()["error"]["message"]


def test_each_input_is_tokenized_once_and_beam_top_k_decodes_once(client, monkeypatch):
    """A request is checked by preparing its inputs (Translator.prepare), and the batch decodes
    what was prepared: the source tokenizer reads each input once; with beam search and top-k
    together the search keeps the top-k (no teacher-forced second pass)."""
    import attnkit.decoding.topk as topk_module

    calls = {"tokenize": 0, "step_top_k": 0}
    tokenize = CharTokenizer.tokenize

    def counted(self, text):
        calls["tokenize"] += 1
        return tokenize(self, text)

    def forced_pass(*args, **kwargs):
        calls["step_top_k"] += 1
        raise AssertionError("a second pass over the outputs")

    monkeypatch.setattr(CharTokenizer, "tokenize", counted)
    monkeypatch.setattr(topk_module, "step_top_k", forced_pass)
    inputs = ["dreiundzwanzig", "siebzehn", "vier"]
    answer = _translate(client, inputs=inputs, beam=3, n_best=2, top_k=2)
    assert calls == {"tokenize": len(inputs), "step_top_k": 0}
    for result in answer["results"]:
        for hyp in result["hypotheses"]:
            assert len(hyp["top_k"]) == len(hyp["tokens"]) and len(hyp["top_k"][0]) == 2


def test_a_reference_comes_back_forced_with_its_gold_links(client, numbers_model):
    """The explorer's gold view of a wrong output: the right output the user gives, written by
    the model forced (as ``explain --reference`` does), with the task's gold links."""
    translator = Translator.load(numbers_model, "cpu")
    (result,) = _translate(client, inputs=["dreiundzwanzig"], reference="23")["results"]
    ref = result["reference"]
    (forced,) = translator.teacher_forced(["dreiundzwanzig"], ["23"])
    assert ref["output"] == "23" and ref["tokens"] == forced.output_tokens
    np.testing.assert_allclose(ref["attention"], forced.weights, atol=1e-5)
    assert ref["score"] == pytest.approx(forced.score, abs=1e-4)
    alignment = gold_aligner(translator.config.data)("dreiundzwanzig", "23")
    assert ref["gold"] == sorted([list(link) for link in alignment.possible]) and ref["gold"]
    (wrong,) = _translate(client, inputs=["dreiundzwanzig"], reference="32")["results"]
    assert wrong["reference"]["output"] == "32" and wrong["reference"]["gold"] is None
    assert _translate(client, inputs=["elf"])["results"][0]["reference"] is None
    response = client.post("/v1/translate", json={"inputs": ["elf", "zwölf"], "reference": "11"})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "reference"
