"""POST /v1/classify_text: a text classifier's answer on sentences and the weight of each word,
as the Python API gives them, batched, with saliency on request; a request for another family's
endpoint is one line naming the right one. The checkpoints are untrained (the tests check
shapes and agreement with the API, not skill)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from attnkit.api import TextModel
from attnkit.data.vocab import Vocab
from attnkit.families.serving import Limits
from attnkit.families.text import bundle as tckpt
from attnkit.families.text.config import parse_config
from attnkit.serve.app import ServeSettings, create_app
from attnkit.training.state import TrainerState

WORDS = ["a", "gripping", "film", "dull", "plot", "."]


def _checkpoint(directory, attention: str):
    cfg = parse_config(
        {
            "family": "text",
            "data": {
                "task": "tsv",
                "train": "t",
                "dev": "d",
                "test": "e",
                "labels": ["neg", "pos"],
            },
            "model": {"attention": attention, "embedding_dim": 8, "hidden": 6, "heads": 2},
        }
    )
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", *WORDS])
    torch.manual_seed(0)
    bundle = tckpt.TextBundle(cfg, vocab, ["neg", "pos"], None)
    bundle.model = tckpt.build_model(cfg, vocab, bundle.labels)
    tckpt.save(directory, bundle, None, TrainerState(), resumable=False)
    return directory


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    return {
        "additive": _checkpoint(root / "additive" / "best", "additive"),
        "lin": _checkpoint(root / "lin" / "best", "structured"),
        "plain": _checkpoint(root / "plain" / "best", "none"),
    }


@pytest.fixture(scope="module")
def client(served):
    settings = ServeSettings(
        models=list(served.values()),
        names=list(served),
        limits=Limits(max_explain_inputs=2),
        max_wait_ms=0,
    )
    with TestClient(create_app(settings)) as c:
        yield c


def _ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def test_the_text_models_are_listed(client):
    info = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
    assert info["additive"]["family"] == "text" and info["additive"]["labels"] == ["neg", "pos"]
    assert info["lin"]["heads"] == 2 and info["plain"]["has_attention"] is False


def test_the_example_is_a_sentence_of_words_the_model_knows(client):
    """The sentence view opens on a sentence the vocabulary holds word for word (SST's own
    example needs a comma and "moving", which this tiny vocabulary lacks: its first words)."""
    example = client.get("/v1/models").json()["models"][0]["example"]
    assert example.split() and set(example.split()) <= set(WORDS)
    answer = _ok(client.post("/v1/classify_text", json={"model": "additive", "inputs": [example]}))
    assert answer["results"][0]["tokens"] == example.split()


def test_the_answer_is_the_python_apis(client, served):
    sentences = ["a gripping film", "dull plot ."]
    body = _ok(client.post("/v1/classify_text", json={"model": "additive", "inputs": sentences}))
    expected = TextModel.load(served["additive"], "cpu").classify(sentences)
    assert body["model"] == "additive" and len(body["results"]) == 2
    for got, want in zip(body["results"], expected, strict=True):
        assert got["label"] == want.label and got["tokens"] == want.tokens
        np.testing.assert_allclose(got["weights"], want.weights, atol=1e-5)
        assert got["saliency"] is None
        assert got["record"]["output_tokens"] == [want.label]


def test_a_request_is_read_once(client, monkeypatch):
    from attnkit.families.text import model as text_model

    read = []
    tokenize = text_model.tokenize
    monkeypatch.setattr(text_model, "tokenize", lambda *a: read.append(a[0]) or tokenize(*a))
    sentences = ["a gripping film", "dull plot ."]
    for explain in (False, True):
        read.clear()
        body = {"model": "lin", "inputs": sentences, "explain": explain}
        _ok(client.post("/v1/classify_text", json=body))
        assert read == sentences  # checked and read by the API object, then classified as read


def test_explain_adds_saliency_and_heads_come_as_rows(client):
    body = _ok(
        client.post(
            "/v1/classify_text", json={"model": "lin", "inputs": ["a film"], "explain": True}
        )
    )
    (result,) = body["results"]
    assert np.asarray(result["weights"]).shape == (2, 2)  # heads x words
    assert sum(result["saliency"]) == pytest.approx(1.0, abs=1e-4)
    plain = _ok(client.post("/v1/classify_text", json={"model": "plain", "inputs": ["film"]}))
    assert plain["results"][0]["weights"] is None


def test_bad_requests_name_the_field(client):
    cases = [
        ({"model": "additive", "inputs": ["  "]}, 422, "inputs[0]"),
        ({"model": "additive", "inputs": ["a", "b", "c"], "explain": True}, 422, "inputs"),
        ({"model": "nobody", "inputs": ["a"]}, 404, "model"),
        ({"inputs": []}, 422, "inputs"),
    ]
    for body, status, field in cases:
        response = client.post("/v1/classify_text", json=body)
        assert response.status_code == status, response.text
        assert response.json()["error"]["field"] == field
    wrong = client.post("/v1/translate", json={"model": "additive", "inputs": ["a"]})
    assert wrong.status_code == 422
    assert wrong.json()["error"]["message"] == (
        "model: 'additive' is a text model: use /v1/classify_text"
    )
