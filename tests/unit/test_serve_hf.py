"""``attnkit serve --model hf:DIR``: ``GET /v1/models`` describes a pretrained model, ``POST
/v1/pretrained`` answers a text with the model's own task (a BERT classifier, GPT-2 generating,
a Marian translator) and every layer's and head's attention, as ``attnkit.load("hf:DIR")`` does
in Python; the layer, head, part and mean asked for are what comes back, and bad requests are one
plain 422 line naming the field."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers", reason="no transformers (pip install attnkit[hf])")
from fastapi.testclient import TestClient  # noqa: E402

import attnkit  # noqa: E402
from attnkit.families.hf.tiny import save_tiny  # noqa: E402
from attnkit.families.serving import Limits  # noqa: E402
from attnkit.serve.app import ServeSettings, create_app  # noqa: E402

TEXT = "the cats looked at attention"
KINDS = ("bert", "gpt2", "marian")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> ``hf:DIR`` of a tiny BERT classifier, GPT-2 and Marian translator."""
    root = tmp_path_factory.mktemp("hf-serve")
    return {kind: f"hf:{save_tiny(kind, root / kind)}" for kind in KINDS}


@pytest.fixture(scope="module")
def client(models):
    settings = ServeSettings(
        models=list(models.values()),
        names=list(models),
        limits=Limits(max_new_tokens=8, max_map_cells=2000),
    )
    with TestClient(create_app(settings)) as c:
        yield c


def post(client, **body):
    return client.post("/v1/pretrained", json=body)


def test_models_describe_each_pretrained_model(client):
    described = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
    assert set(described) == set(KINDS)
    bert, gpt2, marian = (described[k] for k in KINDS)
    assert bert["family"] == "hf" and bert["task"] == "classify" and bert["parts"] == ["self"]
    assert (bert["layers"], bert["heads"], bert["max_positions"]) == (2, 4, 24)
    assert gpt2["task"] == "generate" and gpt2["max_positions"] == 32
    assert marian["task"] == "translate" and marian["parts"] == ["encoder", "decoder", "cross"]
    assert bert["limits"]["max_new_tokens"] == 8 and bert["limits"]["max_map_cells"] == 2000
    # a model reading text opens on a sentence, which its route answers
    assert all(isinstance(m["example"], str) and m["example"] for m in described.values())
    answer = client.post("/v1/pretrained", json={"model": KINDS[0], "text": bert["example"]})
    assert answer.status_code == 200, answer.text


def test_a_classification_comes_with_every_layer_and_head_as_the_api_gives_them(client, models):
    body = post(client, model="bert", text=TEXT).json()
    expected = attnkit.load(models["bert"]).classify(TEXT)
    assert body["task"] == "classify" and body["label"] == expected.label == body["output"]
    assert body["probs"] == pytest.approx(expected.probs, abs=1e-5)
    (name,) = body["parts"]
    part, want = body["parts"][name], expected.parts["self"]
    assert part["query_tokens"] == part["key_tokens"] == want.queries.labels
    assert part["query_tokens"][0] == "[CLS]" and part["query_tokens"][-1] == "[SEP]"
    maps = np.array(part["maps"])
    assert maps.shape == want.heads.shape == (2, 4, len(want.queries), len(want.keys))
    np.testing.assert_allclose(maps, want.heads, atol=1e-5)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-4)  # every row a distribution
    assert (part["layer_numbers"], part["head_numbers"]) == ([1, 2], [1, 2, 3, 4])
    np.testing.assert_allclose(part["rollout"], expected.rollout(), atol=1e-5)


def test_one_layer_one_head_or_their_mean_are_slices_of_the_whole(client):
    whole = np.array(post(client, model="bert", text=TEXT).json()["parts"]["self"]["maps"])
    one = post(client, model="bert", text=TEXT, layer=2, head=3).json()["parts"]["self"]
    assert (one["layer_numbers"], one["head_numbers"]) == ([2], [3])
    np.testing.assert_allclose(np.array(one["maps"])[0, 0], whole[1, 2], atol=1e-5)
    layer = post(client, model="bert", text=TEXT, layer=1, mean=True).json()["parts"]["self"]
    assert layer["mean"] and np.array(layer["maps"]).shape[:2] == (1, 1)
    np.testing.assert_allclose(np.array(layer["maps"])[0, 0], whole[0].mean(0), atol=1e-5)
    bare = post(client, model="bert", text=TEXT, rollout=False).json()["parts"]["self"]
    assert bare["rollout"] is None


def test_words_merge_the_subword_pieces(client):
    body = post(client, model="bert", text="the cats looked", words=True).json()
    part = body["parts"]["self"]
    assert part["key_tokens"] == ["[CLS]", "the", "cats", "looked", "[SEP]"] == part["query_tokens"]
    maps = np.array(part["maps"])
    assert maps.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-4)  # a word's column: its pieces' sum


def test_generation_writes_at_most_the_tokens_asked_and_attends_over_all_of_them(client, models):
    body = post(client, model="gpt2", text="the cat sat", max_new_tokens=4).json()
    expected = attnkit.load(models["gpt2"]).generate("the cat sat", max_new_tokens=4)
    assert body["task"] == "generate" and body["output"] == expected.output
    part = body["parts"]["self"]
    assert part["query_tokens"] == expected.parts["self"].queries.labels
    maps = np.array(part["maps"])
    assert maps.shape[2] == maps.shape[3] == len(part["query_tokens"])
    assert np.allclose(np.triu(maps, k=1), 0.0)  # causal: nothing after the query
    np.testing.assert_allclose(maps, expected.parts["self"].heads, atol=1e-5)


def test_a_translation_has_the_encoder_decoder_and_cross_attention(client, models):
    body = post(client, model="marian", text="the cat sat", max_new_tokens=5).json()
    (expected,) = attnkit.load(models["marian"]).translate("the cat sat", max_new_tokens=5)
    assert body["output"] == expected.output
    assert list(body["parts"]) == ["encoder", "decoder", "cross"]
    cross = body["parts"]["cross"]
    assert cross["kind"] == "cross" and cross["key_tokens"] == expected.source_tokens
    np.testing.assert_allclose(cross["maps"], expected.parts["cross"].heads, atol=1e-5)
    np.testing.assert_allclose(cross["rollout"], expected.rollout("cross"), atol=1e-5)
    only = post(client, model="marian", text="the cat sat", part="encoder").json()
    assert list(only["parts"]) == ["encoder"]


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"model": "bert", "text": "   "}, "text", "non-blank"),
        ({"model": "bert", "text": "the cat " * 20}, "text", "holds at most 24"),
        ({"model": "gpt2", "text": "the cat sat " * 8, "max_new_tokens": 8}, "text", "at most 32"),
        ({"model": "bert", "text": TEXT, "layer": 3}, "layer", "layers 1 to 2"),
        ({"model": "marian", "text": TEXT, "head": 5}, "head", "heads 1 to 4"),
        ({"model": "bert", "text": TEXT, "layer": 0}, "layer", "greater than or equal to 1"),
        ({"model": "bert", "text": TEXT, "task": "translate"}, "task", "its task is classify"),
        ({"model": "bert", "text": TEXT, "part": "cross"}, "part", "has self"),
        ({"model": "bert", "text": TEXT, "max_new_tokens": 3}, "max_new_tokens", "not write"),
        ({"model": "gpt2", "text": TEXT, "max_new_tokens": 9}, "max_new_tokens", "less than"),
        ({"model": "bert", "text": TEXT, "layer": "1"}, "layer", "integer"),
    ],
)
def test_bad_requests_are_one_line_naming_the_field(client, body, field, says):
    response = post(client, **body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field and says in error["message"]
    assert "\n" not in error["message"]


def test_an_answer_too_big_for_the_limit_says_how_to_ask_for_less(client):
    long = "the cat sat on the mat and the dog barked"  # 2 x 4 x 17 x 17 > 2000 weights
    response = post(client, model="bert", text=long)
    assert response.status_code == 422
    assert "--max-map-cells" in response.json()["error"]["message"]
    assert post(client, model="bert", text=long, mean=True).status_code == 200


def test_a_request_naming_a_model_of_another_route_is_refused(client, models):
    response = post(client, model="nobody", text=TEXT)
    assert response.status_code == 404 and "bert" in response.json()["error"]["message"]


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_heads_add_the_head_summary_the_api_gives_for_the_text(client, models, kind):
    text, model = "the cat sat", attnkit.load(models[kind])
    if kind == "bert":
        body = post(client, model=kind, text=text, heads=True, mean=True).json()
        want = model.classify(text).head_summary()
    else:
        body = post(client, model=kind, text=text, heads=True, mean=True, max_new_tokens=4).json()
        want = model.generate(text, max_new_tokens=4).head_summary()
    got = body["head_summary"]
    assert got["part"] == "self" and got["tokens"] == want.tokens and got["induction"] is None
    assert got["causal"] is (kind == "gpt2")
    for name in ("entropy", "sink", "previous", "distance"):
        np.testing.assert_allclose(got["scores"][name], getattr(want, name), atol=1e-5)
    rows = {(r["layer"], r["head"]): r for r in got["rows"]}
    layers, heads = want.layers_and_heads
    assert sorted(rows) == [(a, b) for a in range(1, layers + 1) for b in range(1, heads + 1)]
    assert rows[(2, 3)]["sink"] == pytest.approx(float(want.sink[1, 2]), abs=1e-5)
    assert np.array(got["profile"]).shape == want.profile.shape
    assert post(client, model=kind, text=text, mean=True).json()["head_summary"] is None


def test_induction_adds_the_models_seeded_scores(client, models):
    body = post(client, model="gpt2", text="the cat", heads=True, induction=True, mean=True)
    got = body.json()["head_summary"]
    want = attnkit.load(models["gpt2"]).head_summary()
    assert got["induction"]["period"] == want.period and got["induction"]["seed"] == 0
    np.testing.assert_allclose(got["induction"]["scores"], want.induction, atol=1e-5)
    row = next(r for r in got["rows"] if (r["layer"], r["head"]) == (2, 1))
    assert row["induction"] == pytest.approx(float(want.induction[1, 0]), abs=1e-5)


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"model": "bert", "text": TEXT, "heads": "yes"}, "heads", "boolean"),
        ({"model": "bert", "text": TEXT, "induction": True}, "induction", "heads: true"),
        (
            {"model": "marian", "text": TEXT, "heads": True, "induction": True},
            "induction",
            "part encoder or decoder",
        ),
    ],
)
def test_bad_head_summary_requests_name_the_field(client, body, field, says):
    response = post(client, **body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field and says in error["message"], error


def test_the_head_summary_counts_against_the_map_limit(models):
    settings = ServeSettings(
        models=[models["bert"]], names=["bert"], limits=Limits(max_map_cells=100)
    )
    with TestClient(create_app(settings)) as small:
        alone = post(small, model="bert", text="the cat sat", mean=True)
        tokens = len(alone.json()["parts"]["self"]["query_tokens"])
        # one mean map fits; with 2 x 4 heads' distance profiles and rows it does not
        assert tokens**2 <= 100 < tokens**2 + 2 * 4 * tokens + 2 * 4 * 6
        response = post(small, model="bert", text="the cat sat", mean=True, heads=True)
    assert response.status_code == 422
    assert "head summary" in response.json()["error"]["message"]


def png(width: int, height: int, kind: str = "PNG", seed: int = 0) -> bytes:
    """A random RGB picture of ``width`` x ``height`` as a ``kind`` file's bytes."""
    import io

    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=kind)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def vit(tmp_path_factory, models):
    """(a client serving a tiny ViT and the BERT classifier, the ViT's ``hf:DIR``)."""
    name = f"hf:{save_tiny('vit', tmp_path_factory.mktemp('hf-vit') / 'vit')}"
    limits = Limits(max_image_side=64, max_image_bytes=40_000)
    settings = ServeSettings(models=[name, models["bert"]], names=["vit", "bert"], limits=limits)
    with TestClient(create_app(settings)) as c:
        yield c, name


def upload(client, data: bytes, **request):
    import json

    form = {"request": json.dumps(request)} if request else None
    return client.post("/v1/pretrained", files={"image": ("x.png", data, "image/png")}, data=form)


def test_an_image_model_has_no_example_a_text_model_its_sentence(vit):
    """The pretrained view waits for a picture: no example for an image model."""
    client, _ = vit
    described = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
    assert described["vit"]["example"] is None and described["bert"]["example"]


def test_an_uploaded_image_gets_every_layers_and_heads_maps_over_its_patches(vit):
    client, name = vit
    data = png(24, 20)
    response = upload(client, data)
    assert response.status_code == 200, response.text
    body = response.json()
    expected = attnkit.load(name).classify(data)
    assert body["task"] == "classify" and body["label"] == expected.label == body["output"]
    assert body["probs"] == pytest.approx(expected.probs, abs=1e-5)
    assert body["source"] == "an image of 24x20"
    part = body["parts"]["self"]
    assert part["query_tokens"][:2] == ["[CLS]", "r0c0"] and part["key_tokens"][-1] == "r3c3"
    maps = np.array(part["maps"])
    assert maps.shape == (2, 4, 17, 17)  # 16 patches of 4 x 4 pixels and [CLS]
    np.testing.assert_allclose(maps, expected.parts["self"].heads, atol=1e-5)
    np.testing.assert_allclose(part["rollout"], expected.rollout(), atol=1e-5)
    assert body["patches"] == {"rows": 4, "cols": 4, "first": 1}
    # the same picture sent twice: the same answer (the model's input does not drift)
    assert upload(client, data).json() == body


def test_an_uploads_request_field_chooses_the_maps(vit):
    client, _ = vit
    data = png(16, 16, seed=1)
    whole = np.array(upload(client, data).json()["parts"]["self"]["maps"])
    one = upload(client, data, layer=2, head=3, rollout=False).json()["parts"]["self"]
    assert np.array(one["maps"]).shape == (1, 1, 17, 17) and one["rollout"] is None
    np.testing.assert_allclose(one["maps"][0][0], whole[1, 2], atol=1e-5)
    mean = upload(client, data, mean=True, model="vit").json()["parts"]["self"]["maps"]
    np.testing.assert_allclose(mean[0][0], whole.mean(axis=(0, 1)), atol=1e-5)


@pytest.mark.parametrize(
    ("send", "status", "field", "says"),
    [
        (lambda c: c.post("/v1/pretrained", json={"text": TEXT}), 422, "text", "reads images"),
        (lambda c: c.post("/v1/pretrained", json={}), 422, "image", "upload a PNG or JPEG"),
        (lambda c: upload(c, png(16, 16, "GIF")), 422, "image", "give a PNG or JPEG"),
        (lambda c: upload(c, b"not an image"), 422, "image", "PNG or JPEG"),
        (lambda c: upload(c, png(80, 20)), 413, "image", "--max-image-side"),
        (lambda c: upload(c, png(120, 120, "BMP")), 413, "image", "--max-image-bytes"),
        (lambda c: upload(c, png(200, 200, "BMP")), 413, "body", "--max-image-bytes"),
        (lambda c: upload(c, png(16, 16), layer=3), 422, "layer", "layers 1 to 2"),
        (lambda c: upload(c, png(16, 16), layer="1"), 422, "layer", "integer"),
        (lambda c: upload(c, png(16, 16), text=TEXT), 422, "text", "reads images"),
        (lambda c: upload(c, png(16, 16), model="bert"), 422, "image", "reads text"),
        (
            lambda c: c.post("/v1/pretrained", files={"request": (None, "{}")}),
            422,
            "image",
            "field 'image'",
        ),
    ],
)
def test_bad_uploads_are_one_line_naming_the_field(vit, send, status, field, says):
    response = send(vit[0])
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field and says in error["message"], error
    assert "\n" not in error["message"]


def test_a_text_model_still_refuses_a_request_without_text(client):
    response = client.post("/v1/pretrained", json={"model": "bert"})
    assert response.status_code == 422 and response.json()["error"]["field"] == "text"
