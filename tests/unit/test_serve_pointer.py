"""The explorer's pointer view: ``GET /v1/models`` describes a pointer network, ``POST
/v1/solve`` answers a point set (or a list of numbers) with the order chosen and the attention
of each step, as ``PointerModel.solve`` does in Python, and bad point sets are one plain 4xx
line naming the field."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import attnkit
from attnkit.checkpoint import write_checkpoint
from attnkit.families.pointer.bundle import build_model
from attnkit.families.pointer.config import parse_config
from attnkit.families.serving import Limits
from attnkit.serve.app import ServeSettings, create_app

POINTS = [[0.1, 0.1], [0.9, 0.2], [0.5, 0.9], [0.5, 0.5], [0.3, 0.4]]


def _checkpoint(directory, task: str):
    """An untrained pointer network for ``task`` (hull: points, sort: numbers)."""
    data = {"task": task, "points": 5}
    cfg = parse_config(
        {"family": "pointer", "data": data, "model": {"hidden": 8, "attention_dim": 8}}
    )
    torch.manual_seed(0)
    write_checkpoint(directory, "pointer", build_model(cfg).state_dict(), cfg.to_dict(), {})
    return directory


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("pointer")
    return _checkpoint(root / "hull" / "best", "hull"), _checkpoint(root / "sort" / "best", "sort")


@pytest.fixture(scope="module")
def client(models):
    settings = ServeSettings(
        models=list(models), names=["hull", "sort"], limits=Limits(max_points=6)
    )
    with TestClient(create_app(settings)) as c:
        yield c


def test_models_describe_the_pointer_networks(client):
    hull, sort = client.get("/v1/models").json()["models"]
    assert (hull["family"], hull["task"], hull["dims"]) == ("pointer", "hull", 2)
    assert (sort["task"], sort["dims"], sort["points"]) == ("sort", 1, 5)


def test_the_example_is_a_few_distinct_points_the_route_solves(client):
    """What the pointer view opens with: at most 8 distinct points in the unit square (a sorting
    model: as many numbers as it was trained on, fewer than 8 here), the same every call."""
    hull, sort = client.get("/v1/models").json()["models"]
    for info, dims in ((hull, 2), (sort, 1)):
        count = min(8, info["points"])
        points = info["example"]
        assert len(points) == count and all(len(p) == dims for p in points)
        assert len({tuple(p) for p in points}) == count
        assert all(0 <= v <= 1 for p in points for v in p)
        body = client.post("/v1/solve", json={"model": info["name"], "points": points}).json()
        assert sorted(body["order"]) == list(range(count))  # every point visited once
    assert client.get("/v1/models").json()["models"][0]["example"] == hull["example"]


@pytest.mark.parametrize("beam", [1, 3])
def test_a_solution_is_the_apis_with_its_attention(client, models, beam):
    body = client.post("/v1/solve", json={"model": "hull", "points": POINTS, "beam": beam}).json()
    expected = attnkit.load(models[0]).solve(POINTS, beam=beam)
    assert body["model"] == "hull" and body["task"] == "hull" and body["order"] == expected.order
    np.testing.assert_allclose(body["attention"], expected.attention, atol=1e-6)
    assert np.asarray(body["attention"]).shape == (len(body["order"]) + 1, len(POINTS) + 1)
    assert body["area"] == pytest.approx(expected.figures["area"])
    record = body["record"]
    assert record["source_tokens"][0] == "end" and len(record["source_tokens"]) == 6
    assert len(record["output_tokens"]) == len(body["attention"])


def test_numbers_to_sort_are_one_coordinate_each(client):
    body = client.post("/v1/solve", json={"points": [[0.7], [0.1], [0.4]], "model": "sort"}).json()
    assert sorted(body["order"]) == [0, 1, 2] and body["task"] == "sort"
    first = client.post("/v1/solve", json={"points": [[0.7], [0.1], [0.4]]})  # no model: hull
    assert first.status_code == 422 and first.json()["error"]["field"] == "points[0]"


@pytest.mark.parametrize(
    ("request_body", "field", "needle"),
    [
        ({"points": [[0.1, 0.1], [0.5, 0.5], [0.1, 0.1]]}, "points", "duplicate point [0.1, 0.1]"),
        ({"points": [[0.1, 0.2], [0.3]]}, "points[1]", "reads 2 coordinate(s) per point, got 1"),
        ({"points": [[0.1, 0.2]] * 7}, "points", "at most 6"),
        ({"points": []}, "points", "at least 1"),
        ({"points": [[0.1, 0.2, 0.3]]}, "points[0]", "at most 2"),
        ({"points": [["a", 0.2]]}, "points[0][0]", "valid number"),
        ({"points": POINTS, "beam": 0}, "beam", "greater than or equal to 1"),
    ],
)
def test_bad_point_sets_are_one_line_naming_the_field(client, request_body, field, needle):
    answer = client.post("/v1/solve", json={"model": "hull", **request_body})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and needle in error["message"], error


def test_a_pointer_network_is_asked_at_its_own_endpoint(client):
    answer = client.post("/v1/answer", json={"model": "sort", "story": ["x."], "question": "y?"})
    assert answer.status_code == 422 and "use /v1/solve" in answer.json()["error"]["message"]


def test_the_page_has_the_pointer_view(client):
    page = client.get("/").text
    assert 'id="pointer-view"' in page and "static/pointer.js" in page
    script = client.get("/static/pointer.js")
    assert script.status_code == 200 and "AttnkitPointer" in script.text
