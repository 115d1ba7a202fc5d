"""The explorer's graph view: ``GET /v1/models`` describes a graph model, ``POST
/v1/graph/node`` answers a node's neighbourhood, attention per layer and head, and saliency, and
the page carries the view."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnkit.checkpoint import write_checkpoint
from attnkit.data.graph.sources import load_graph
from attnkit.families.graph.bundle import build_model
from attnkit.families.graph.config import parse_config
from attnkit.serve.app import ServeSettings, create_app


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    cfg = parse_config(
        {
            "family": "graph",
            "data": {"name": "dictionary_lookup", "k": 3, "graphs": 4, "normalize": False},
            "model": {"attention": "gatv2", "hidden": 4, "heads": 2, "self_loops": False},
        }
    )
    torch.manual_seed(0)
    model = build_model(cfg, load_graph(cfg.data))
    best = tmp_path_factory.mktemp("lookup") / "best"
    write_checkpoint(best, "graph", model.state_dict(), cfg.to_dict(), {})
    return best


@pytest.fixture(scope="module")
def client(checkpoint):
    with TestClient(create_app(ServeSettings(models=[checkpoint], names=["lookup"]))) as c:
        yield c


def test_models_describe_the_graph_model(client):
    (info,) = client.get("/v1/models").json()["models"]
    assert info["family"] == "graph" and info["attention"] == "gatv2"
    assert info["nodes"] == (4 + 2) * 6 and info["heads"] == 2 and info["layers"] == 2
    assert 0 <= info["example"] < info["nodes"]  # the node the graph view opens on


def test_a_node_comes_with_its_neighbourhood_attention_and_saliency(client):
    body = client.post("/v1/graph/node", json={"node": 3}).json()  # the first query of graph 0
    assert body["model"] == "lookup" and body["neighbours"][0] == body["node"]
    assert len(body["classes"]) == len(body["neighbours"]) == len(body["saliency"])
    assert [len(w[0]) for w in body["weights"]] == [2, 1]  # heads of the two layers
    into = [k for k, (_, t) in enumerate(body["edges"]) if t == 0]
    assert len(into) == 3  # the three keys of its graph
    assert abs(sum(body["weights"][-1][k][0] for k in into) - 1) < 1e-5
    by_name = client.post("/v1/graph/node", json={"node": body["node"]}).json()
    assert by_name["index"] == 3


def test_a_node_outside_the_graph_is_one_line_naming_the_field(client):
    answer = client.post("/v1/graph/node", json={"node": 999})
    assert answer.status_code == 422
    assert (
        answer.json()["error"]["field"] == "node" and "0..35" in answer.json()["error"]["message"]
    )


def test_the_page_has_the_graph_view(client):
    page = client.get("/").text
    assert 'id="graph-view"' in page and "static/graph.js" in page
    script = client.get("/static/graph.js")
    assert script.status_code == 200 and "AttnkitGraph" in script.text


def test_a_model_of_another_family_is_a_422_naming_its_endpoint(checkpoint, tmp_path):
    """Never a 500: a pointer network named at /v1/graph/node, or a graph model at another
    family's route, is told where to ask; with no graph model served, a 422 says so."""
    from test_serve_pointer import _checkpoint

    hull = _checkpoint(tmp_path / "hull" / "best", "hull")
    settings = ServeSettings(models=[checkpoint, hull], names=["lookup", "hull"])
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        for body, needle in (
            ({"model": "hull", "node": 1}, "'hull' is a pointer model: use /v1/solve"),
            ({"model": "hull", "node": "1"}, "use /v1/solve"),
        ):
            answer = c.post("/v1/graph/node", json=body)
            assert answer.status_code == 422 and answer.json()["error"]["field"] == "model"
            assert needle in answer.json()["error"]["message"]
        answer = c.post("/v1/solve", json={"model": "lookup", "points": [[0, 0], [1, 1]]})
        assert answer.status_code == 422 and "use /v1/graph/node" in answer.text
    with TestClient(create_app(ServeSettings(models=[hull])), raise_server_exceptions=False) as c:
        answer = c.post("/v1/graph/node", json={"node": 1})
        assert answer.status_code == 422 and "no graph model is served" in answer.text
