"""The explorer's memory-network view: ``GET /v1/models`` describes a memory network, ``POST
/v1/answer`` answers a question about a pasted story with each hop's attention over its
sentences (the supporting facts of a bAbI question line marked), as ``MemoryModel.answer`` does
in Python, and bad stories are one plain 4xx line naming the field."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import attnkit
from attnkit.data.babi_vectors import BabiVocab
from attnkit.families.memnet.adapter import save_checkpoint
from attnkit.families.memnet.config import parse_config
from attnkit.families.serving import Limits
from attnkit.models.memn2n import MemN2N
from attnkit.serve.app import ServeSettings, create_app
from attnkit.training.state import TrainerState

WORDS = ["<empty>", "bathroom", "hallway", "is", "john", "mary", "moved", "the", "to", "where"]
STORY = ["Mary moved to the bathroom.", "John moved to the hallway."]
BABI = ["1 Mary moved to the bathroom.", "2 John moved to the hallway.",
        "3 Where is Mary? \tbathroom\t1"]  # fmt: skip


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An untrained three-hop memory network over a few words, memory of 4 sentences."""
    model = {"memory": "adjacent", "dim": 6, "hops": 3}
    cfg = parse_config({"family": "memnet", "data": {"memory_size": 4}, "model": model})
    torch.manual_seed(0)
    net = MemN2N(cfg.model, len(WORDS), cfg.data.memory_size)
    best = tmp_path_factory.mktemp("babi") / "best"
    save_checkpoint(best, net, cfg, BabiVocab(WORDS, 6, 4, 4), TrainerState())
    return best


@pytest.fixture(scope="module")
def client(checkpoint):
    limits = Limits(max_story_lines=5, max_words=6)
    app = create_app(ServeSettings(models=[checkpoint], names=["babi"], limits=limits))
    with TestClient(app) as c:
        yield c


def test_models_describe_the_memory_network(client):
    (info,) = client.get("/v1/models").json()["models"]
    assert info["family"] == "memnet" and info["hops"] == 3 and info["memory_size"] == 4
    assert info["limits"]["max_story_lines"] == 5


def test_the_example_story_uses_only_words_the_model_knows(client, checkpoint):
    """The memory view opens on a bAbI story and question whose every word the model read in
    training (or on nothing); the route answers it with no unknown word."""
    from attnkit.data.babi import words

    (info,) = client.get("/v1/models").json()["models"]
    example = info["example"]
    known = attnkit.load(checkpoint).vocab.ids
    if example is None:  # the model lacks a word of the story: nothing is better than noise
        return
    assert set(example) == {"story", "question"} and example["story"]
    assert all(w in known for line in [*example["story"], example["question"]] for w in words(line))
    body = client.post("/v1/answer", json=example).json()
    assert body["unknown"] == [] and len(body["sentences"]) == len(example["story"])


def test_an_answer_comes_with_each_hops_attention_as_the_api_gives_it(client, checkpoint):
    body = client.post("/v1/answer", json={"story": STORY, "question": "Where is Mary?"}).json()
    expected = attnkit.load(checkpoint).answer(STORY, "Where is Mary?")
    assert body["model"] == "babi" and body["answer"] == expected.answer
    assert body["sentences"] == STORY and body["hops"] == 3
    np.testing.assert_allclose(body["attention"], expected.attention, atol=1e-6)
    assert np.allclose(np.sum(body["attention"], axis=1), 1.0, atol=1e-5)
    record = body["record"]
    assert record["output_tokens"] == STORY and record["source_tokens"] == [
        "hop 1",
        "hop 2",
        "hop 3",
    ]
    assert body["supporting"] == [] and body["truth"] is None and record.get("gold") is None


def test_a_babi_question_line_brings_its_answer_and_supporting_facts(client):
    body = client.post("/v1/answer", json={"story": BABI}).json()
    assert body["question"] == "Where is Mary?" and body["truth"] == "bathroom"
    assert body["sentences"] == STORY and body["supporting"] == [0]
    assert body["record"]["gold"] == [[0, 0], [0, 1], [0, 2]]  # the fact, at every hop
    asked = client.post("/v1/answer", json={"story": BABI, "question": "Where is John?"}).json()
    assert asked["question"] == "Where is John?" and asked["supporting"] == []


def test_one_sentence_a_line_or_one_line_of_sentences_and_unknown_words_said(client):
    line = client.post("/v1/answer", json={"story": [" ".join(STORY)], "question": "Where is Bob?"})
    assert line.json()["sentences"] == STORY and line.json()["unknown"] == ["bob"]


def test_a_story_is_read_once_on_its_way_through_the_server(client, monkeypatch):
    """The API object reads the request's story as it is checked; the worker answers what it
    read, parsing nothing again."""
    from attnkit.families.memnet import model as memnet_model

    calls = {"story_sentences": 0, "parse_stories": 0}
    for name in calls:
        real = getattr(memnet_model, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(memnet_model, name, counted)
    for body in ({"story": STORY, "question": "Where is Mary?"}, {"story": BABI},
                 {"story": STORY, "question": "Where is Mary?", "explain": True}):  # fmt: skip
        assert client.post("/v1/answer", json=body).status_code == 200
    assert calls == {"story_sentences": 2, "parse_stories": 1}


def test_explain_adds_the_saliency_over_the_sentences(client):
    body = client.post(
        "/v1/answer", json={"story": STORY, "question": "Where is Mary?", "explain": True}
    ).json()
    assert len(body["saliency"]) == 2 and sum(body["saliency"]) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(
    ("request_body", "field", "needle"),
    [
        ({"story": STORY}, "question", "question: ask one"),
        ({"story": STORY * 3, "question": "Where?"}, "story", "at most 5 items"),
        ({"story": ["Mary left. " * 6], "question": "Where?"}, "story", "6 sentences, above"),
        ({"story": ["a b c d e f g."], "question": "Where?"}, "story[0]", "7 words"),
        ({"story": STORY, "question": "where is the one mary moved to?"}, "question", "7 words"),
        ({"story": ["1 Where is Mary?\tbathroom\t1"]}, "story", "story:1: a question before"),
        ({"story": ["Mary left.", "x\ty"]}, "story", "story:1: neither a fact"),
        ({"story": [" "], "question": "Where?"}, "story", "story: no sentence to read"),
        ({"story": [], "question": "Where?"}, "story", "at least 1"),
        ({"story": STORY, "question": "Where?", "hops": 2}, "hops", "not a field"),
    ],
)
def test_bad_stories_are_one_line_naming_the_field(client, request_body, field, needle):
    answer = client.post("/v1/answer", json=request_body)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and needle in error["message"], error


def test_a_memory_network_is_asked_at_its_own_endpoint(client):
    answer = client.post("/v1/translate", json={"model": "babi", "inputs": ["x"]})
    assert answer.status_code == 422 and "use /v1/answer" in answer.json()["error"]["message"]


def test_the_page_has_the_memory_view(client):
    page = client.get("/").text
    assert 'id="memory-view"' in page and "static/memory.js" in page
    script = client.get("/static/memory.js")
    assert script.status_code == 200 and "AttnkitMemory" in script.text


def test_plot_refuses_a_question_of_thousands_of_words_in_one_line(checkpoint, tmp_path, capsys):
    """As a text model refuses a sentence of more than 1,000 words, before any drawing."""
    from attnkit.cli import main

    picture = tmp_path / "hops.png"
    story = "Mary moved to the bathroom. John moved to the hallway."
    argv = ["plot", "--model", str(checkpoint), "--story", story, "-o", str(picture)]
    assert main([*argv, "where " * 24_000]) == 2
    err = capsys.readouterr().err
    assert "question: 24,000 words, more than 1,000" in err and len(err.splitlines()) == 1, err
    assert not picture.exists()
    assert main([*argv, "Where is Mary?"]) == 0 and picture.is_file()
