"""The explorer page at ``/`` of a real ``attnkit serve``, in headless chromium: what the page
shows is checked against what the API answers for the same request."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

WAIT = 30  # seconds: a busy CPU decodes slowly
SOURCE = "dreiundzwanzig"


def show(token: str) -> str:
    """A token as the page writes it (heatmap.js showToken)."""
    from attnkit.viz.heatmap import display_token  # the same rule, in Python

    return display_token(token).replace(r"\$", "$")


def body(model: str, text: str = SOURCE, **kw) -> dict:
    """The request the page sends (text.js requestBody) with the page's defaults."""
    return {
        "model": model,
        "inputs": [text],
        "beam": 1,
        "n_best": 1,
        "top_k": 5,
        "prefix": None,
        "explain": False,
        "gold": False,
        "rollout": False,
        **kw,
    }


def severe(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait(driver, condition, what: str):
    # the page redraws as answers come: an element read mid-redraw is looked up again
    w = WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))
    return w.until(lambda d: condition(d), message=what)


def cells(driver, css: str = "#heatmap td.hm-cell"):
    return driver.find_elements(By.CSS_SELECTOR, css)


def wait_cells(driver, n: int, css: str = "#heatmap td.hm-cell"):
    wait(driver, lambda d: len(cells(d, css)) == n, f"{n} cells in {css}")
    return cells(driver, css)


def set_value(driver, element_id: str, value, event: str = "change") -> None:
    driver.execute_script(
        "var e = document.getElementById(arguments[0]); e.value = arguments[1];"
        "e.dispatchEvent(new Event(arguments[2]));",
        element_id,
        str(value),
        event,
    )


@pytest.fixture
def page(driver, server):
    """The page freshly loaded, its model list in; no console errors by the end of the test."""
    driver.get(server.url)
    wait(
        driver,
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"),
        "the model list",
    )
    severe(driver)  # start the test's log empty
    yield driver
    assert severe(driver) == []


def type_source(driver, text: str = SOURCE) -> None:
    box = driver.find_element(By.ID, "source")
    box.clear()
    box.send_keys(text)


def test_the_page_lists_the_servers_models(page, server):
    listed = server.get("v1/models").json()["models"]
    options = Select(page.find_element(By.ID, "model")).options
    assert [o.get_attribute("value") for o in options] == [m["name"] for m in listed]
    assert page.find_element(By.ID, "text-view").is_displayed()  # the first is seq2seq
    assert not page.find_element(By.ID, "error").is_displayed()


def test_typing_draws_the_translation_and_output_by_source_cells(page, server):
    type_source(page)
    result = server.post("v1/translate", body("numbers"))["results"][0]
    hyp = result["hypotheses"][0]
    drawn = wait_cells(page, len(hyp["tokens"]) * len(result["source_tokens"]))
    assert page.find_element(By.ID, "output").text == hyp["output"].strip()
    heads = page.find_elements(By.CSS_SELECTOR, "#heatmap thead th")[1:]
    assert [h.get_attribute("textContent") for h in heads] == list(
        map(show, result["source_tokens"])
    )
    cols = len(result["source_tokens"])
    for k, cell in enumerate(drawn):
        i, j = divmod(k, cols)
        assert float(cell.get_attribute("data-w")) == pytest.approx(hyp["attention"][i][j])


def test_hovering_a_cell_reads_the_token_pair_and_weight(page, server):
    type_source(page)
    result = server.post("v1/translate", body("numbers"))["results"][0]
    hyp, src = result["hypotheses"][0], result["source_tokens"]
    drawn = wait_cells(page, len(hyp["tokens"]) * len(src))
    i, j = len(hyp["tokens"]) // 2, len(src) // 2
    ActionChains(page).move_to_element(drawn[i * len(src) + j]).perform()
    tooltip = page.find_element(By.ID, "tooltip")
    wait(page, lambda d: tooltip.is_displayed(), "the tooltip")
    expected = f"{show(hyp['tokens'][i])} <- {show(src[j])}: {hyp['attention'][i][j]:.3f}"
    assert tooltip.text == expected


def test_clicking_a_top_k_candidate_decodes_again_through_it(page, server):
    type_source(page)
    result = server.post("v1/translate", body("numbers"))["results"][0]
    hyp = result["hypotheses"][0]
    wait_cells(page, len(hyp["tokens"]) * len(result["source_tokens"]))
    steps = page.find_elements(By.CSS_SELECTOR, "#topk .step")
    assert len(steps) == len(hyp["top_k"])
    chips = page.find_elements(By.CSS_SELECTOR, '#topk .chip[data-step="0"]')
    assert [c.get_attribute("data-token") for c in chips] == [c["token"] for c in hyp["top_k"][0]]
    other = next(c for c in chips if c.get_attribute("data-token") != hyp["tokens"][0])
    token = other.get_attribute("data-token")
    other.click()
    forced = server.post("v1/translate", body("numbers", prefix=[token]))["results"][0]
    forced_hyp = forced["hypotheses"][0]
    assert forced_hyp["tokens"][0] == token
    wait(page, lambda d: d.find_element(By.ID, "prefix").text == show(token), "the prefix")
    wait(
        page,
        lambda d: d.find_element(By.ID, "output").text == forced_hyp["output"].strip(),
        "the re-decoded output",
    )
    wait_cells(page, len(forced_hyp["tokens"]) * len(forced["source_tokens"]))
    page.find_element(By.ID, "reset").click()
    wait(page, lambda d: not d.find_element(By.ID, "prefix-bar").is_displayed(), "no prefix")
    wait(
        page,
        lambda d: d.find_element(By.ID, "output").text == hyp["output"].strip(),
        "the output without the prefix",
    )


def trie_size(sequences: list[list[str]]) -> int:
    nodes = {()}
    for seq in sequences:
        nodes.update(tuple(seq[:k]) for k in range(1, len(seq) + 1))
    return len(nodes)


def test_n_best_list_and_beam_tree(page, server):
    set_value(page, "beam", 4)
    set_value(page, "nbest", 3)
    type_source(page)
    result = server.post("v1/translate", body("numbers", beam=4, n_best=3))["results"][0]
    hyps = result["hypotheses"]
    want = {f"{h['score']:.3f}" for h in hyps}
    wait(  # the page opened on its example: wait for this source's list, not that one's
        page,
        lambda d: (
            {e.text for e in d.find_elements(By.CSS_SELECTOR, "#beamtree text.score")} == want
        ),
        "the n-best list",
    )
    items = page.find_elements(By.CSS_SELECTOR, "#nbest-list .hyp-out")
    assert [i.text for i in items] == [h["output"].strip() for h in hyps]
    tokens = [h["tokens"] for h in hyps]
    nodes = page.find_elements(By.CSS_SELECTOR, "#beamtree g.node")
    assert len(nodes) == trie_size(tokens)  # shared prefixes merged
    leaves = page.find_elements(By.CSS_SELECTOR, "#beamtree g.leaf")
    assert len(leaves) == len({tuple(t) for t in tokens})
    scores = {leaf.find_element(By.CSS_SELECTOR, "text.score").text for leaf in leaves}
    assert scores == want
    last = len(hyps) - 1
    page.find_element(By.CSS_SELECTOR, f'#beamtree g.leaf[data-hyp="{last}"]').click()
    wait_cells(page, len(hyps[last]["tokens"]) * len(result["source_tokens"]))
    shown = page.find_element(By.CSS_SELECTOR, "#nbest-list li.shown")
    assert shown.get_attribute("data-hyp") == str(last)


def test_side_by_side_draws_both_models_on_shared_axes(page, server):
    type_source(page)
    Select(page.find_element(By.ID, "second")).select_by_value("general")
    a = server.post("v1/translate", body("numbers"))["results"][0]
    b = server.post("v1/translate", body("general"))["results"][0]
    cols = len(a["source_tokens"])
    assert b["source_tokens"] == a["source_tokens"]  # one tokenizer: one column axis
    n_a, n_b = (len(r["hypotheses"][0]["tokens"]) * cols for r in (a, b))
    drawn = wait_cells(page, n_a + n_b, "#sbs-maps td.hm-cell")
    assert (
        page.find_element(By.ID, "sbs-b").text
        == f"general (luong-general attention, RNN): {b['hypotheses'][0]['output']}".strip()
    )
    boxes = [c.rect for c in drawn]
    assert len({(r["width"], r["height"]) for r in boxes}) == 1  # same cell size
    for k in range(cols):  # column k of both maps at the same x
        assert boxes[k]["x"] == boxes[n_a + k]["x"]
    # one colour scale: the largest weight of both maps is the top colour, and the other
    # map's largest is not, unless it is as large
    weights = [float(c.get_attribute("data-w")) for c in drawn]
    colours = [c.value_of_css_property("background-color") for c in drawn]
    top_colour = ("rgb(253, 231, 37)", "rgba(253, 231, 37, 1)")
    parts = sorted([(0, n_a), (n_a, n_a + n_b)], key=lambda p: -max(weights[p[0] : p[1]]))
    high = max(range(*parts[0]), key=weights.__getitem__)
    low = max(range(*parts[1]), key=weights.__getitem__)
    assert colours[high] in top_colour
    assert weights[low] > 0.97 * weights[high] or colours[low] not in top_colour
    # the model's own map above is on the same scale as the two side by side
    legends = [
        e.text
        for e in page.find_elements(By.CSS_SELECTOR, "#heatmap .hm-legend, #sbs-maps .hm-legend")
    ]
    assert len(legends) == 2 and legends[0] == legends[1] and legends[0].endswith(" attention")


def test_a_vision_model_shows_its_prediction_and_attention_over_the_image(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("digits")
    answer = server.post("v1/classify", {"model": "digits", "index": 0})
    (step,) = answer["steps"]
    regions = len(step["attention"]) * len(step["attention"][0])
    wait_cells(page, regions, "#overlay .ov-cell")
    assert page.find_element(By.ID, "prediction").text == answer["prediction"]
    assert not page.find_element(By.ID, "text-view").is_displayed()
    third = server.post("v1/classify", {"model": "digits", "index": 3})
    set_value(page, "image-index", 3)
    wait(
        page,
        lambda d: (
            [c.get_attribute("data-w") for c in cells(d, "#overlay .ov-cell")]
            == [str(w) for w in sum(third["steps"][0]["attention"], [])]
        ),
        "image 3's attention",
    )
    assert page.find_element(By.ID, "prediction").text == third["prediction"]


def test_a_drawn_digit_is_sent_and_what_the_model_saw_is_shown(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("digits")
    wait(page, lambda d: cells(d, "#overlay .ov-cell"), "test image 0")
    before = page.execute_script("return document.querySelector('#overlay canvas').toDataURL()")
    pad = page.find_element(By.ID, "pad")
    ActionChains(page).move_to_element_with_offset(pad, 0, -30).click_and_hold().move_by_offset(
        5, 20
    ).move_by_offset(5, 20).move_by_offset(0, 15).release().perform()
    page.find_element(By.ID, "classify-drawing").click()

    def changed(d):
        url = d.execute_script(
            "var c = document.querySelector('#overlay canvas');return c && c.toDataURL()"
        )
        return url and url != before

    wait(page, changed, "the drawing classified")
    seen = page.execute_script(  # the image the server says the model saw: a vertical stroke
        "var c = document.querySelector('#overlay canvas'), g = c.getContext('2d');"
        "var d = g.getImageData(0, 0, c.width, c.height).data, s = 0;"
        "for (var k = 0; k < d.length; k += 4) s += d[k]; return s / (d.length / 4) / 255;"
    )
    assert 0.02 < seen < 0.5  # some white on black, not blank, not all white
    assert page.find_element(By.ID, "prediction").text != ""


def test_enter_decodes_and_a_beam_past_the_limit_is_the_limit(page, server):
    limits = server.get("v1/models").json()["models"][0]["limits"]
    box = page.find_element(By.ID, "source")
    box.clear()
    box.send_keys("elf\n")  # Enter: decoded at once, no line break in the input
    assert page.find_element(By.ID, "source").get_attribute("value") == "elf"
    want = server.post("v1/translate", body("numbers", "elf"))["results"][0]["hypotheses"][0]
    wait(page, lambda d: d.find_element(By.ID, "output").text == want["output"], "the output")
    assert page.find_element(By.ID, "beam").get_attribute("max") == str(limits["max_beam"])
    set_value(page, "beam", limits["max_beam"] + 2)
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#nbest-list li")) >= 1, "n-best")
    assert not page.find_element(By.ID, "error").is_displayed()
    # the box shows the beam asked for, not the number typed
    assert page.find_element(By.ID, "beam").get_attribute("value") == str(limits["max_beam"])
    typed = str(limits["max_beam"] + 5)
    set_value(page, "nbest", typed)
    wait(page, lambda d: d.find_element(By.ID, "nbest").get_attribute("value") != typed, "n-best")
    assert page.find_element(By.ID, "nbest").get_attribute("value") == str(limits["max_beam"])


def test_errors_from_the_api_are_shown_inline(page, server):
    limits = server.get("v1/models").json()["models"][0]["limits"]
    too_long = "a" * (int(limits.get("max_chars", 5000)) + 1)
    set_value(page, "source", too_long, event="input")
    error = page.find_element(By.ID, "error")
    wait(page, lambda d: error.is_displayed(), "the error")
    assert error.text.startswith("inputs[0]: ") and len(error.text.splitlines()) == 1
    logged = severe(page)  # the browser logs the 4xx answer itself, nothing else
    assert all("status of 4" in m for m in logged), logged
    type_source(page)
    wait(page, lambda d: not error.is_displayed(), "the error cleared")


def test_a_glimpse_path_plays_step_by_step(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("glimpses")
    answer = server.post("v1/classify", {"model": "glimpses", "index": 0})
    n = len(answer["steps"])
    assert n > 1 and all(s["glimpse"] for s in answer["steps"])
    label = page.find_element(By.ID, "step-label")
    wait(page, lambda d: label.text == f"step 1/{n}", "the first glimpse")
    assert page.find_elements(By.CSS_SELECTOR, "#overlay canvas.ov-glimpses")
    page.find_element(By.ID, "play").click()
    wait(page, lambda d: label.text == f"step 2/{n}", "the second glimpse, played")
    page.find_element(By.ID, "play").click()  # pause
    assert page.find_element(By.ID, "play").text == "play"
    set_value(page, "step", n - 1, event="input")
    wait(page, lambda d: label.text == f"step {n}/{n}", "the last glimpse, from the slider")


def test_saliency_and_gold_links_where_the_model_has_them(page, server):
    info = server.get("v1/models").json()["models"][0]
    assert page.find_element(By.ID, "saliency-label").is_displayed() == info["explain"]
    assert page.find_element(By.ID, "gold-label").is_displayed() == info["has_gold"]
    type_source(page)
    want = body("numbers", explain=info["explain"], gold=info["has_gold"])
    result = server.post("v1/translate", want)["results"][0]
    size = len(result["hypotheses"][0]["tokens"]) * len(result["source_tokens"])
    wait_cells(page, size)
    for box in ("saliency", "gold"):
        if page.find_element(By.ID, box).is_displayed():
            page.find_element(By.ID, box).click()
    maps = 2 if info["explain"] else 1
    flat = [w for row in result["saliency"] or [] for w in row]  # the second map: saliency
    cols = len(result["source_tokens"])
    # the server gives links only where it can align this output (else null: none drawn)
    links = {(i, j) for i, j in result["gold"] or [] if j < cols}

    def drawn_as_answered(d):
        got = [float(c.get_attribute("data-w")) for c in cells(d)]
        gold = cells(d, "#heatmap td.hm-gold")
        spots = {(int(c.get_attribute("data-i")), int(c.get_attribute("data-j"))) for c in gold}
        return len(got) == maps * size and got[size:] == pytest.approx(flat) and spots == links

    wait(page, drawn_as_answered, "saliency and gold links drawn as the API answers")


def test_a_transformers_layers_and_heads_are_chosen_and_drawn(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("transformer")
    wait(page, lambda d: d.find_element(By.ID, "layers-box").is_displayed(), "layer selectors")
    type_source(page)
    result = server.post("v1/translate", body("transformer"))["results"][0]
    hyp, cols = result["hypotheses"][0], len(result["source_tokens"])
    layers = hyp["layers"]  # (T, L, H, S)
    n = len(hyp["tokens"]) * cols
    drawn = wait_cells(page, n)
    for k, cell in enumerate(drawn):  # the default: the mean of all, the API's attention
        assert float(cell.get_attribute("data-w")) == pytest.approx(
            hyp["attention"][k // cols][k % cols], abs=1e-4
        )
    set_value(page, "layer", 1)  # the second layer, its second head
    set_value(page, "head", 1)

    def shows_the_head(d):
        weights = [float(c.get_attribute("data-w")) for c in cells(d)]
        wanted = [layers[k // cols][1][1][k % cols] for k in range(n)]
        return len(weights) == n and all(abs(a - b) < 1e-4 for a, b in zip(weights, wanted))

    wait(page, shows_the_head, "layer 2, head 2's weights")
    page.find_element(By.ID, "grid").click()
    grid = "#heatmap td.hm-cell"  # every layer and head: L x H maps of the same size
    wait_cells(page, n * len(layers[0]) * len(layers[0][0]), grid)


def test_a_transformers_rollout_and_flow_are_chosen_and_drawn(page, server):
    """The map selector's rollout and flow draw what the API answers for them, not the raw
    attention; back on attention, the attention again."""
    Select(page.find_element(By.ID, "model")).select_by_value("transformer")
    wait(page, lambda d: d.find_element(By.ID, "layers-box").is_displayed(), "layer selectors")
    type_source(page)
    result = server.post("v1/translate", body("transformer", rollout=True))["results"][0]
    hyp, cols = result["hypotheses"][0], len(result["source_tokens"])
    n = len(hyp["tokens"]) * cols

    def drawn(d):
        return [float(c.get_attribute("data-w")) for c in cells(d)]

    def shows(weights):
        wanted = [weights[k // cols][k % cols] for k in range(n)]

        def check(d):
            got = drawn(d)
            return len(got) == n and all(abs(a - b) < 1e-4 for a, b in zip(got, wanted))

        return check

    wait(page, shows(hyp["attention"]), "the attention first")
    for kind in ("rollout", "flow"):
        assert result[kind] is not None, result["flow_note"]
        assert any(
            abs(a - b) > 1e-3
            for ra, rb in zip(result[kind], hyp["attention"])
            for a, b in zip(ra, rb)
        ), f"{kind} equals the attention: the test would not see the map change"
        set_value(page, "map", kind)
        wait(page, shows(result[kind]), f"the {kind} map the API answered")
        assert page.find_element(By.ID, "layer").get_attribute("disabled")
    set_value(page, "map", "attention")
    wait(page, shows(hyp["attention"]), "the attention again")


def test_a_text_classifier_shades_each_word_by_its_weight(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("sentences")
    assert page.find_element(By.ID, "sentence-view").is_displayed()
    assert not page.find_element(By.ID, "text-view").is_displayed()
    set_value(page, "sentence", "a gripping film", "input")
    request = {"model": "sentences", "inputs": ["a gripping film"]}
    answer = server.post("v1/classify_text", request)["results"][0]

    def drawn_answer(d) -> bool:  # the view's opening example may still be drawing: wait it out
        weights = [float(c.get_attribute("data-w")) for c in cells(d, "#sentence-map td.hm-cell")]
        words = [w.text for w in d.find_elements(By.CSS_SELECTOR, "#sentence-words .word")]
        return words == answer["tokens"] and weights == pytest.approx(answer["weights"])

    wait(page, drawn_answer, "the typed sentence's words and weights")
    assert page.find_element(By.ID, "sentence-label").text == answer["label"]
    page.find_element(By.ID, "sentence-saliency").click()  # the attention, then the saliency
    explained = server.post("v1/classify_text", {**request, "explain": True})["results"][0]
    drawn = wait_cells(page, 6, "#sentence-map td.hm-cell")
    assert [float(c.get_attribute("data-w")) for c in drawn[3:]] == pytest.approx(
        explained["saliency"], abs=1e-4
    )


def test_the_page_opens_on_the_models_example_already_drawn(page, server):
    """Nothing typed: a German number model's page opens on siebenundneunzig, decoded, its map
    drawn (the example GET /v1/models gives); a sentence the user typed is never replaced."""
    example = server.get("v1/models").json()["models"][0]["example"]
    assert example == "siebenundneunzig"
    assert page.find_element(By.ID, "source").get_attribute("value") == example
    result = server.post("v1/translate", body("numbers", example))["results"][0]
    hyp = result["hypotheses"][0]
    wait_cells(page, len(hyp["tokens"]) * len(result["source_tokens"]))
    assert page.find_element(By.ID, "output").text == hyp["output"].strip()
    type_source(page, "elf")
    Select(page.find_element(By.ID, "model")).select_by_value("digits")
    Select(page.find_element(By.ID, "model")).select_by_value("numbers")
    assert page.find_element(By.ID, "source").get_attribute("value") == "elf"


def test_a_cleared_index_box_is_one_clean_line_and_sends_nothing(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("digits")
    wait(page, lambda d: cells(d, "#overlay .ov-cell"), "test image 0")
    set_value(page, "image-index", "")
    error = page.find_element(By.ID, "error")
    wait(page, lambda d: error.is_displayed(), "the error")
    assert error.text == "test image: type its number (0, 1, 2, ...), or draw a digit"
    assert not page.find_element(By.ID, "vision-results").is_displayed()  # no stale answer
    set_value(page, "image-index", 2)
    wait(page, lambda d: not error.is_displayed(), "the error cleared by a number")
    wait(page, lambda d: cells(d, "#overlay .ov-cell"), "test image 2")


def test_an_empty_pad_is_not_classified(page, server):
    """A blank pad once came back as the digit "1" with its attention over nothing."""
    Select(page.find_element(By.ID, "model")).select_by_value("digits")
    wait(page, lambda d: cells(d, "#overlay .ov-cell"), "test image 0")
    page.find_element(By.ID, "clear-pad").click()
    page.find_element(By.ID, "classify-drawing").click()
    error = page.find_element(By.ID, "error")
    wait(page, lambda d: error.is_displayed(), "the error")
    assert error.text == "draw a digit first: the pad is empty"
    assert not page.find_element(By.ID, "vision-results").is_displayed()
    assert not cells(page, "#overlay .ov-cell")  # no overlay drawn over a blank


def test_a_blank_upload_is_refused_by_the_server_in_one_line(page, server):
    """What a page or a script sends blank (an empty strip, a black square): one 422 naming
    the image, which the page's API call reads as field and message, the field said once."""
    import io

    import httpx
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.zeros((28, 28), np.uint8)).save(buffer, format="PNG")
    answer = httpx.post(
        server.url + "v1/classify",
        data={"model": "digits"},
        files={"image": ("b.png", buffer.getvalue(), "image/png")},
        timeout=60,
    )
    assert answer.status_code == 422
    problem = answer.json()["error"]
    assert problem["field"] == "image" and "blank" in problem["message"]
    seen = page.execute_async_script(
        "var done = arguments[0], c = document.createElement('canvas');"
        "c.width = c.height = 28; var g = c.getContext('2d');"
        "g.fillStyle = '#000'; g.fillRect(0, 0, 28, 28);"
        "c.toBlob(function (blob) {"
        "  AttnkitApi.classifyImage('digits', blob).then(function () { done('answered'); },"
        "    function (e) { done([e.field, e.message]); });"
        "}, 'image/png');"
    )
    assert seen[0] == "image" and "blank" in seen[1] and not seen[1].startswith("image:")
    assert all("status of 422" in m for m in severe(page))  # the browser logs the 422 itself
