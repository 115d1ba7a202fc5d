"""POST /v1/classify on vision checkpoints: a test image or an upload, and where the model looked
at each step (attention maps, or the glimpses of the Recurrent Attention Model).

The checkpoints are untrained and read a small synthetic MNIST test split written here (their
answers are whatever they are: the tests check shapes and consistency, not skill)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from PIL import Image
from test_serve_app import numbers_model  # noqa: F401  (trained once per test run)
from test_vision_evaluation import MODELS, N_TEST, _write_idx

from attnkit.checkpoint import write_checkpoint
from attnkit.families.serving import Limits
from attnkit.families.vision import model as vision_api
from attnkit.families.vision.config import parse_config
from attnkit.families.vision.kinds import MODEL_TYPES
from attnkit.models import show_attend_tell as sat
from attnkit.serve.app import ServeSettings, create_app


@pytest.fixture(scope="module")
def test_images(tmp_path_factory):
    directory = tmp_path_factory.mktemp("data") / "mnist"  # $ATTNKIT_DATA_DIR/mnist
    directory.mkdir()
    rng = np.random.default_rng(0)
    images = (rng.random((N_TEST, 28, 28)) > 0.8).astype(np.uint8) * 255
    _write_idx(directory / "t10k-images-idx3-ubyte", images, 2051)
    _write_idx(directory / "t10k-labels-idx1-ubyte", np.arange(N_TEST) % 10, 2049)
    return directory, images


@pytest.fixture(scope="module")
def client(test_images, numbers_model, tmp_path_factory):  # noqa: F811
    directory, _ = test_images
    dirs = []
    for model_type in ("attention_pooling", "ram"):
        cfg = parse_config(
            {
                "family": "vision",
                # neither followed: the images are read from $ATTNKIT_DATA_DIR/mnist
                "data": {
                    "task": "mnist",
                    "directory": "/nowhere",
                    "download": True,
                    "verify": False,
                },
                "model": MODELS[model_type],
            }
        )
        torch.manual_seed(0)
        model = MODEL_TYPES[model_type].build(cfg.model)
        best = tmp_path_factory.mktemp(model_type) / "best"
        write_checkpoint(best, "vision", model.state_dict(), cfg.to_dict(), {})
        dirs.append(best)
    limits = Limits(max_image_bytes=20_000, max_image_side=200)
    settings = ServeSettings(
        models=[*dirs, numbers_model], names=["pool", "ram"], limits=limits, max_wait_ms=0
    )
    with pytest.MonkeyPatch.context() as env, TestClient(create_app(settings)) as c:
        env.setenv("ATTNKIT_DATA_DIR", str(directory.parent))
        yield c


def _png(width: int, height: int, noise: bool = False, kind: str = "PNG") -> bytes:
    rng = np.random.default_rng(1)
    pixels = np.zeros((height, width), dtype=np.uint8)
    pixels[height // 4 : 3 * height // 4, width // 2 - 2 : width // 2 + 2] = 255  # a "1"
    if noise:
        pixels = rng.integers(0, 256, (height, width), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=kind)
    return buffer.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A ``width`` x ``height`` PNG's header and a stub of data: all Pillow reads to open it."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"IDAT", b"x")


def _ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def test_the_vision_models_are_listed(client):
    info = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
    assert info["pool"]["family"] == "vision" and info["pool"]["attention"] == "spatial"
    assert info["ram"]["attention"] == "glimpse" and info["ram"]["task"] == "mnist"
    assert info["numbers"]["family"] == "seq2seq"
    assert info["pool"]["example"] is None  # the view opens on the test image in its box


def test_a_test_image_through_attention_pooling(client, test_images):
    _, images = test_images
    body = _ok(client.post("/v1/classify", json={"model": "pool", "index": 3}))
    assert body["model"] == "pool"
    np.testing.assert_allclose(body["image"], images[3] / 255.0, atol=1e-6)
    probs = np.array(body["probs"])
    assert probs.shape == (10,) and probs.sum() == pytest.approx(1.0, abs=1e-4)
    assert body["prediction"] == str(int(probs.argmax()))
    (step,) = body["steps"]
    weights = np.array(step["attention"])
    assert weights.ndim == 2 and weights.sum() == pytest.approx(1.0, abs=1e-4)
    assert step["glimpse"] is None


def test_the_glimpses_of_ram(client):
    body = _ok(client.post("/v1/classify", json={"model": "ram", "index": 0}))
    assert len(body["steps"]) == MODELS["ram"]["glimpses"]
    for step in body["steps"]:
        g = step["glimpse"]
        assert -1.0 <= g["x"] <= 1.0 and -1.0 <= g["y"] <= 1.0 and g["size"] > 0
        assert step["attention"] is None
    again = _ok(client.post("/v1/classify", json={"model": "ram", "index": 0}))
    assert again == body  # the policy's means: one path per image


def test_an_upload_is_made_the_models_input(client):
    files = {"image": ("one.png", _png(56, 56), "image/png")}
    body = _ok(client.post("/v1/classify", files=files, data={"model": "pool"}))
    image = np.array(body["image"])
    assert image.shape == (28, 28) and 0.0 <= image.min() and image.max() <= 1.0
    assert image.max() > 0.5  # the stroke is there, white on black
    default = _ok(client.post("/v1/classify", files=files))  # the first vision model
    assert default["model"] == "pool"


@pytest.mark.parametrize(
    "payload, status, needle",
    [
        (_png(56, 56, kind="GIF"), 422, "PNG or JPEG"),
        (b"not an image at all", 422, "PNG or JPEG"),
        (_png(300, 40), 413, "--max-image-side"),
        (_png_header(20_000, 20_000), 413, "above the limit of 200 pixels a side"),
        (_png(4, 4), 422, "each side must be"),
        (_png(190, 190, noise=True), 413, "--max-image-bytes"),
    ],
)
def test_a_bad_upload_names_the_image(client, payload, status, needle):
    response = client.post("/v1/classify", files={"image": ("x", payload, "image/png")})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] in ("image", "body") and needle in error["message"]


@pytest.mark.parametrize(
    "body, field, needle",
    [
        ({"model": "pool", "index": 99}, "index", f"0..{N_TEST - 1}"),
        ({"model": "pool", "index": -1}, "index", "greater than or equal to 0"),
        ({"model": "pool", "index": "2"}, "index", "valid integer"),
        ({"model": "pool"}, "index", "required"),
        ({"model": "numbers", "index": 1}, "model", "/v1/translate"),
        ({"model": "nope", "index": 1}, "model", "served: pool, ram, numbers"),
    ],
)
def test_bad_classify_requests_name_the_field(client, body, field, needle):
    response = client.post("/v1/classify", json=body)
    assert response.status_code in (404, 422), response.text
    error = response.json()["error"]
    assert error["field"] == field and needle in error["message"]


def test_translate_refuses_a_vision_model(client):
    response = client.post("/v1/translate", json={"model": "ram", "inputs": ["vier"]})
    assert response.status_code == 422 and "/v1/classify" in response.json()["error"]["message"]


def test_the_reader_reads_step_by_step():
    """The answer's digits and the steps the page draws (the report's, from the family)."""
    torch.manual_seed(0)
    model = sat.ShowAttendTell([4, 8], 8, 16, 8, True, 0.0).eval()
    image = (np.random.default_rng(0).random((28, 84)) * 255).astype(np.uint8)
    x = torch.from_numpy(image).float().div(255.0)[None, None]
    with torch.no_grad():
        prediction, probs = vision_api.ANSWERS["show_attend_tell"](model, x)
    steps = MODEL_TYPES["show_attend_tell"].steps(model, image, None)
    assert probs is None and 1 <= len(steps) <= vision_api.READER_STEPS
    assert prediction == "".join(s["token"] for s in steps if s["token"].isdigit())
    assert steps[-1]["token"] == "<eos>" or len(steps) == vision_api.READER_STEPS
    for s in steps:  # each weight rounded to 5 decimals
        assert np.array(s["attention"]).sum() == pytest.approx(1.0, abs=1e-3)
