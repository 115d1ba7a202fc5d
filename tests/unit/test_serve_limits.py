"""attnkit serve refuses what breaks its limits or its schema: one 4xx JSON error naming the
field (and the limit), and a bad request never disturbs a good one."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from test_serve_app import numbers_model  # noqa: F401  (trained once per test run)

from attnkit.errors import ConfigError
from attnkit.families.seq2seq import endpoint as translate
from attnkit.families.serving import Limits
from attnkit.serve.app import ServeSettings, create_app

SMALL = Limits(
    max_chars=20, max_inputs=3, max_beam=4, max_top_k=6, max_prefix=2, max_explain_inputs=2
)


@pytest.fixture(scope="module")
def client(numbers_model):  # noqa: F811
    settings = ServeSettings(models=[numbers_model], limits=SMALL, max_wait_ms=1.0)
    with TestClient(create_app(settings)) as c:
        yield c


def _error(response, status: int, field: str | None, *needles: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field, error
    assert "\n" not in error["message"]
    for needle in needles:
        assert needle in error["message"], (needle, error["message"])
    return error["message"]


@pytest.mark.parametrize(
    "body, field, needles",
    [
        ({"inputs": ["vier", "x" * 21]}, "inputs[1]", ["inputs[1]", "20 characters"]),
        ({"inputs": ["vier"] * 4}, "inputs", ["at most 3"]),
        ({"inputs": []}, "inputs", ["at least 1"]),
        ({"inputs": ["vier"], "beam": 5}, "beam", ["less than or equal to 4"]),
        ({"inputs": ["vier"], "beam": 0}, "beam", ["greater than or equal to 1"]),
        ({"inputs": ["vier"], "beam": 2, "n_best": 3}, "n_best", ["beam size (2)"]),
        ({"inputs": ["vier"], "top_k": 7}, "top_k", ["less than or equal to 6"]),
        ({"inputs": ["vier"], "prefix": ["1", "2", "3"]}, "prefix", ["at most 2"]),
        ({"inputs": ["vier"], "alpha": -1.0}, "alpha", ["greater than or equal to 0"]),
        ({"inputs": ["vier"] * 3, "explain": True}, "explain", ["at most 2 inputs", "got 3"]),
    ],
)
def test_each_limit_is_a_422_naming_the_field(client, body, field, needles):
    _error(client.post("/v1/translate", json=body), 422, field, *needles)


@pytest.mark.parametrize(
    "body, field, needles",
    [
        ({"inputs": "vier"}, "inputs", ["valid list"]),
        ({"inputs": ["vier"], "beam": "2"}, "beam", ["valid integer"]),
        ({"inputs": ["vier"], "explain": "yes"}, "explain", ["valid boolean"]),
        ({"inputs": [4]}, "inputs[0]", ["valid string"]),
        ({"inputs": ["vier"], "beem": 2}, "beem", ["not a field"]),
        ({"beam": 2}, "inputs", ["required"]),
        ({"inputs": ["   "]}, "inputs[0]", ["blank"]),
        ({"inputs": ["vier"], "prefix": ["1", "Q"]}, "prefix[1]", ["'Q'", "target vocabulary"]),
        ({"inputs": ["vier"], "prefix": ["</s>"]}, "prefix[0]", ["special"]),
    ],
)
def test_wrong_types_and_values_name_the_field(client, body, field, needles):
    _error(client.post("/v1/translate", json=body), 422, field, *needles)


def test_malformed_bodies(client):
    post = client.post
    headers = {"content-type": "application/json"}
    _error(post("/v1/translate", content=b'{"inputs": [', headers=headers), 422, None, "JSON")
    _error(post("/v1/translate", content=b"[1, 2]", headers=headers), 422, None, "JSON object")
    _error(post("/v1/translate", content=b"", headers=headers), 422, None, "body")


def test_an_unknown_model_is_a_404_listing_the_names(client):
    response = client.post("/v1/translate", json={"model": "nope", "inputs": ["vier"]})
    _error(response, 404, "model", "'nope'", "served: numbers")
    _error(client.get("/v1/nothing"), 404, None, "/v1/nothing")


def test_a_body_above_the_limit_is_a_413_before_parsing(numbers_model):  # noqa: F811
    settings = ServeSettings(models=[numbers_model], limits=Limits(max_body_bytes=200))
    with TestClient(create_app(settings)) as c:
        big = {"inputs": ["vier"], "padding": "x" * 300}
        _error(c.post("/v1/translate", json=big), 413, "body", "200", "--max-body-bytes")

        def chunks():  # no Content-Length: read up to the limit only
            yield b'{"inputs": ["vier"], "x": "'
            for _ in range(10):
                yield b"y" * 50
            yield b'"}'

        response = c.post("/v1/translate", content=chunks(), headers={"content-type": "x"})
        _error(response, 413, "body", "--max-body-bytes")


def _slow_decode(monkeypatch, seconds: float):
    original = translate._decode

    def slow(*args):
        time.sleep(seconds)
        return original(*args)

    monkeypatch.setattr(translate, "_decode", slow)


def test_decoding_too_long_is_a_504(numbers_model, monkeypatch):  # noqa: F811
    _slow_decode(monkeypatch, 0.6)
    settings = ServeSettings(models=[numbers_model], limits=Limits(decode_seconds=0.2))
    with TestClient(create_app(settings)) as c:
        _error(c.post("/v1/translate", json={"inputs": ["vier"]}), 504, None, "--decode-seconds")


def test_a_full_queue_is_a_503(numbers_model, monkeypatch):  # noqa: F811
    _slow_decode(monkeypatch, 2.0)
    settings = ServeSettings(models=[numbers_model], limits=Limits(queue_size=1), max_wait_ms=0)
    with TestClient(create_app(settings)) as c, ThreadPoolExecutor(4) as pool:
        futures = []
        for _ in range(4):
            futures.append(pool.submit(c.post, "/v1/translate", json={"inputs": ["vier"]}))
            # in order: one decodes, one waits, the rest find the queue full (spaced widely
            # enough that a busy machine still delivers them in that order)
            time.sleep(0.25)
        statuses = sorted(f.result().status_code for f in futures)
    assert statuses[:2] == [200, 200] and set(statuses[2:]) == {503}
    assert (
        "--queue-size"
        in [f.result() for f in futures if f.result().status_code == 503][0].json()["error"][
            "message"
        ]
    )


def test_a_bad_request_does_not_disturb_a_good_one(client):
    good = {"inputs": ["dreiundzwanzig", "vier"], "beam": 2}
    alone = client.post("/v1/translate", json=good).json()
    bad = [
        {"inputs": ["vier"], "prefix": ["Q"]},
        {"inputs": ["x" * 50]},
        {"inputs": ["vier"], "beam": 99},
    ]
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(client.post, "/v1/translate", json=b) for b in [good, *bad, good]]
        answers = [f.result() for f in futures]
    assert [a.status_code for a in answers] == [200, 422, 422, 422, 200]
    # the two good requests may decode in one batch: the same answer, up to the last digit
    # of a float (the matmuls of a batch of another shape round differently)
    assert _close(answers[0].json(), alone) and _close(answers[-1].json(), alone)


def _close(a, b, tol: float = 1e-5) -> bool:
    """JSON values equal, floats within ``tol``."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and abs(a - b) <= tol
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    return a == b


def test_cors_is_off_unless_asked(numbers_model, client):  # noqa: F811
    origin = {"origin": "http://elsewhere.example"}
    assert "access-control-allow-origin" not in client.get("/v1/models", headers=origin).headers
    settings = ServeSettings(models=[numbers_model], cors=["http://elsewhere.example"])
    with TestClient(create_app(settings)) as c:
        response = c.get("/v1/models", headers=origin)
        assert response.headers["access-control-allow-origin"] == "http://elsewhere.example"


def test_limits_must_be_positive():
    with pytest.raises(ConfigError, match="--max-beam must be > 0"):
        Limits(max_beam=0)
