"""The explorer's pretrained view in headless chromium, against a real ``attnkit serve --model
hf:DIR`` of tiny Hugging Face models saved here (a BERT classifier, a T5 translator and a ViT
image classifier; nothing downloaded): a typed text draws the model's answer and the heatmap of
the layer and head chosen (the weights the API gives for them), rollout is drawn on request, a
long input is painted on a canvas instead of table cells, a text longer than the model holds is
one line inline, the heads table sorts by a score and shows a clicked head's map, and a picture
given to the ViT draws its label and the chosen map over its patches."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
pytest.importorskip("transformers", reason="no transformers (pip install attnkit[hf])")
from conftest import require_browser, start_server  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from test_explorer import set_value, severe, wait, wait_cells  # noqa: E402

TEXT = "the cats looked at attention"
CELLS = "#pt-map-box td.hm-cell"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_browser()
    from attnkit.families.hf.tiny import save_tiny

    root = tmp_path_factory.mktemp("hf-explorer")
    models = [(kind, f"hf:{save_tiny(kind, root / kind)}") for kind in ("bert", "t5", "vit")]
    with start_server(models, root / "serve.log") as srv:
        yield srv


@pytest.fixture
def page(driver, server):
    driver.get(server.url)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "list")
    severe(driver)
    yield driver
    assert severe(driver) == []


def type_text(driver, text: str) -> None:
    set_value(driver, "pt-text", text, "input")


def drawn(cells) -> np.ndarray:
    """The weights of the drawn table cells, as a (T, S) array."""
    rows = 1 + max(int(c.get_attribute("data-i")) for c in cells)
    return np.array([float(c.get_attribute("data-w")) for c in cells]).reshape(rows, -1)


def test_a_classifier_draws_its_label_and_the_chosen_layer_and_head(page, server):
    assert page.find_element(By.ID, "pretrained-view").is_displayed()  # the first model's view
    type_text(page, TEXT)
    answer = server.post("v1/pretrained", {"model": "bert", "text": TEXT})
    part = answer["parts"]["self"]
    size = len(part["query_tokens"]) * len(part["key_tokens"])
    cells = wait_cells(page, size, CELLS)
    assert page.find_element(By.ID, "pt-output").text == answer["label"]
    mean = np.mean(part["maps"], axis=(0, 1))
    np.testing.assert_allclose(drawn(cells), mean, atol=1e-4)  # the mean of every layer and head
    assert [o.text for o in Select(page.find_element(By.ID, "pt-layer")).options] == [
        "mean",
        "1",
        "2",
    ]
    set_value(page, "pt-layer", "2")
    set_value(page, "pt-head", "3")
    want = np.array(part["maps"])[1, 2]
    wait(page, lambda d: np.allclose(drawn(wait_cells(d, size, CELLS)), want, atol=1e-4), "L2 H3")
    assert "layer 2, head 3" in page.find_element(By.CSS_SELECTOR, "#pt-map-box .hm-title").text


def test_rollout_is_drawn_on_request(page, server):
    type_text(page, TEXT)
    set_value(page, "pt-map", "rollout")
    answer = server.post("v1/pretrained", {"model": "bert", "text": TEXT})
    rollout = np.array(answer["parts"]["self"]["rollout"])
    wait(page, lambda d: "rollout" in d.find_element(By.ID, "pt-map-box").text, "rollout title")
    cells = wait_cells(page, rollout.size, CELLS)
    np.testing.assert_allclose(drawn(cells), rollout, atol=1e-4)
    assert not page.find_element(By.ID, "pt-layer").is_enabled()


def test_a_long_input_is_painted_on_a_canvas(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("t5")
    long = " ".join(["a"] * 250)  # 251 source tokens with </s>
    type_text(page, long)
    canvas = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "canvas.pt-canvas"), "canvas")
    assert canvas[0].get_attribute("data-cols") == "251"  # the cross-attention: over the source
    assert page.find_elements(By.CSS_SELECTOR, CELLS) == []  # no table of cells
    painted = page.execute_script(
        "var c = arguments[0], d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "var n = 0; for (var k = 3; k < d.length; k += 4) if (d[k] > 0) n++; return n;",
        canvas[0],
    )
    assert painted >= 251  # at least a pixel per column of weights
    assert page.find_element(By.ID, "pt-output").text != ""
    set_value(page, "pt-part", "encoder")
    wait(
        page,
        lambda d: (
            d.find_element(By.CSS_SELECTOR, "canvas.pt-canvas").get_attribute("data-rows") == "251"
        ),
        "the encoder's 251 x 251 map",
    )


def test_a_text_longer_than_the_model_holds_is_one_line_inline(page, server):
    type_text(page, "the cat " * 20)
    error = page.find_element(By.ID, "error")
    wait(page, lambda d: error.is_displayed(), "the error line")
    assert error.text.startswith("text: ") and "holds at most 24" in error.text
    assert len(error.text.splitlines()) == 1
    assert not page.find_element(By.ID, "pt-results").is_displayed()
    logged = severe(page)  # the browser logs the 4xx answer itself, nothing else
    assert all("status of 4" in m for m in logged), logged
    type_text(page, TEXT)
    wait(page, lambda d: not error.is_displayed(), "the error cleared")


def table_order(driver) -> list[tuple[int, int]]:
    """The (layer, head) of the heads table's rows, top to bottom."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#pt-heads-table tbody tr")
    return [(int(r.get_attribute("data-layer")), int(r.get_attribute("data-head"))) for r in rows]


def test_the_heads_table_sorts_by_a_score_and_a_row_shows_its_map(page, server):
    type_text(page, TEXT)
    wait(page, lambda d: d.find_element(By.ID, "pt-results").is_displayed(), "the answer")
    page.find_element(By.ID, "pt-heads").click()
    wait(page, lambda d: len(table_order(d)) == 2 * 4, "a row per layer and head")
    answer = server.post("v1/pretrained", {"model": "bert", "text": TEXT, "heads": True})
    rows = answer["head_summary"]["rows"]
    header = page.find_element(By.CSS_SELECTOR, "#pt-heads-table th[data-key='sink']")
    header.click()
    highest = [(r["layer"], r["head"]) for r in sorted(rows, key=lambda r: -r["sink"])]
    wait(page, lambda d: table_order(d) == highest, "rows by sink share, highest first")
    page.find_element(By.CSS_SELECTOR, "#pt-heads-table th[data-key='sink']").click()
    lowest = [(r["layer"], r["head"]) for r in sorted(rows, key=lambda r: r["sink"])]
    wait(page, lambda d: table_order(d) == lowest, "clicked again: lowest first")
    layer, head = lowest[0]
    page.find_element(By.CSS_SELECTOR, "#pt-heads-table tbody tr").click()
    assert page.find_element(By.ID, "pt-layer").get_attribute("value") == str(layer)
    assert page.find_element(By.ID, "pt-head").get_attribute("value") == str(head)
    title = f"layer {layer}, head {head}"
    wait(
        page,
        lambda d: title in d.find_element(By.CSS_SELECTOR, "#pt-map-box .hm-title").text,
        title,
    )
    chosen = "#pt-heads-table tr.chosen"
    wait(page, lambda d: table_order(d)[0] == (layer, head), "the sort kept across answers")
    row = page.find_element(By.CSS_SELECTOR, chosen)
    assert (row.get_attribute("data-layer"), row.get_attribute("data-head")) == (
        str(layer),
        str(head),
    )
    whole = server.post("v1/pretrained", {"model": "bert", "text": TEXT})
    want = np.array(whole["parts"]["self"]["maps"])
    size = want.shape[2] * want.shape[3]
    np.testing.assert_allclose(
        drawn(wait_cells(page, size, CELLS)), want[layer - 1, head - 1], atol=1e-4
    )


def test_induction_scores_join_the_table_of_a_self_attention_part_only(page, server):
    type_text(page, TEXT)
    assert not page.find_element(By.ID, "pt-induction").is_enabled()  # no table yet
    page.find_element(By.ID, "pt-heads").click()
    box = page.find_element(By.ID, "pt-induction")
    wait(page, lambda d: box.is_enabled(), "induction offered with the table")
    box.click()
    css = "#pt-heads-table th[data-key='induction']"
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, css), "an induction column")
    Select(page.find_element(By.ID, "model")).select_by_value("t5")
    wait(page, lambda d: not box.is_enabled(), "none for the translator's cross part")
    wait(page, lambda d: not d.find_elements(By.CSS_SELECTOR, css), "the cross part's table")


def test_a_picture_draws_the_vits_label_and_the_chosen_map_over_its_patches(page, server, tmp_path):
    import json

    import httpx
    from PIL import Image

    picture = tmp_path / "picture.png"
    pixels = np.random.default_rng(0).integers(0, 256, (20, 24, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(picture)
    Select(page.find_element(By.ID, "model")).select_by_value("vit")
    wait(page, lambda d: d.find_element(By.ID, "pt-image").is_displayed(), "the picture input")
    assert not page.find_element(By.ID, "pt-text").is_displayed()
    page.find_element(By.ID, "pt-image").send_keys(str(picture))

    def asked(**request) -> dict:
        files = {"image": ("picture.png", picture.read_bytes(), "image/png")}
        form = {"request": json.dumps({"model": "vit", **request})}
        response = httpx.post(server.url + "v1/pretrained", files=files, data=form, timeout=60)
        response.raise_for_status()
        return response.json()

    answer = asked()
    maps = np.array(answer["parts"]["self"]["maps"])  # (2, 4, 17, 17): [CLS] and 4 x 4 patches
    patches = "#pt-overlay-box .ov-cell"

    def overlay(d) -> np.ndarray:
        found = d.find_elements(By.CSS_SELECTOR, patches)
        return np.array([float(c.get_attribute("data-w")) for c in found]).reshape(4, 4)

    def shows(want: np.ndarray, what: str) -> None:
        wait_cells(page, 16, patches)
        wait(page, lambda d: np.allclose(overlay(d), want, atol=1e-4), what)

    shows(maps.mean(axis=(0, 1))[0, 1:].reshape(4, 4), "the mean map's [CLS] row over the patches")
    assert page.find_element(By.ID, "pt-output").text == answer["label"]
    cells = wait_cells(page, 17 * 17, CELLS)  # and the patch-by-patch map
    np.testing.assert_allclose(drawn(cells), maps.mean(axis=(0, 1)), atol=1e-4)
    assert page.find_element(By.CSS_SELECTOR, "#pt-overlay-box img").get_attribute("src")
    set_value(page, "pt-layer", "2")
    set_value(page, "pt-head", "3")
    shows(maps[1, 2, 0, 1:].reshape(4, 4), "layer 2, head 3 over the patches")
    set_value(page, "pt-map", "rollout")
    rollout = np.array(asked()["parts"]["self"]["rollout"])
    shows(rollout[0, 1:].reshape(4, 4), "the rollout's [CLS] row over the patches")
    title = page.find_element(By.CSS_SELECTOR, "#pt-overlay-box .hm-title").text
    assert title.startswith("[CLS] over the patches") and "rollout" in title


def test_a_vits_show_draws_each_layers_row_over_the_picture(driver, tmp_path):
    """``PretrainedResult.show()`` of an image, as a page: the map with its layer and head
    choice, and the picture with layer 1's [CLS] row over its patches, the slider going on to
    layer 2 and the rollout."""
    import attnkit
    from attnkit.families.hf.tiny import save_tiny

    model = attnkit.load(f"hf:{save_tiny('vit', tmp_path / 'vit')}")
    image = np.random.default_rng(1).integers(0, 256, (16, 16, 3)).astype(np.uint8)
    result = model.classify(image)
    page = tmp_path / "vit.html"
    page.write_text(f"<!doctype html><meta charset=utf-8>{result.html()}", encoding="utf-8")
    driver.get(page.as_uri())
    heads = result.parts["self"].heads  # (2, 4, 17, 17)

    def overlay(d) -> np.ndarray:
        found = d.find_elements(By.CSS_SELECTOR, ".ov-cell")
        return np.array([float(c.get_attribute("data-w")) for c in found]).reshape(4, 4)

    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".ov-cell")) == 16, "patches")
    np.testing.assert_allclose(overlay(driver), heads[0].mean(0)[0, 1:].reshape(4, 4), atol=1e-4)
    assert f"prediction: {result.label}" in driver.find_element(By.TAG_NAME, "body").text
    set_slider = "var s = arguments[0]; s.value = 2; s.dispatchEvent(new Event('input'));"
    driver.execute_script(set_slider, driver.find_element(By.CSS_SELECTOR, ".attnkit-step"))
    want = result.rollout()[0, 1:].reshape(4, 4)
    wait(driver, lambda d: np.allclose(overlay(d), want, atol=1e-4), "the rollout's row")
    assert "rollout" in driver.find_element(By.CSS_SELECTOR, ".attnkit-step-label").text
    assert severe(driver) == []


def test_a_text_model_opens_on_its_example_and_an_image_model_on_nothing(page, server):
    """Nothing typed: the classifier's view opens on its example sentence, answered; the image
    model's view waits for a picture (its example is none); a typed text is never replaced."""
    listed = {m["name"]: m for m in server.get("v1/models").json()["models"]}
    example = listed["bert"]["example"]
    assert example and listed["vit"]["example"] is None
    assert page.find_element(By.ID, "pt-text").get_attribute("value") == example
    answer = server.post("v1/pretrained", {"model": "bert", "text": example})
    part = answer["parts"]["self"]
    wait_cells(page, len(part["query_tokens"]) * len(part["key_tokens"]), CELLS)
    assert page.find_element(By.ID, "pt-output").text == answer["label"]
    box = page.find_element(By.ID, "pt-text")
    box.clear()
    box.send_keys(TEXT)
    Select(page.find_element(By.ID, "model")).select_by_value("vit")
    assert not page.find_element(By.ID, "pt-results").is_displayed()  # no picture, no answer
    Select(page.find_element(By.ID, "model")).select_by_value("bert")
    assert page.find_element(By.ID, "pt-text").get_attribute("value") == TEXT
