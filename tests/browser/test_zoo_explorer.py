"""``attnkit serve`` with no ``--model``: the page the printed address opens shows two models
of the zoo side by side, without a click, and each other family's zoo model answers in its own
view (in headless chromium)."""

from __future__ import annotations

import re

import pytest
from conftest import require_browser, start_server

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_explorer import set_value  # noqa: E402

from attnkit import zoo  # noqa: E402

WAIT = 30


@pytest.fixture(scope="module")
def zoo_server(tmp_path_factory):
    require_browser()
    log = tmp_path_factory.mktemp("serve-zoo") / "serve.log"
    with start_server([], log) as srv:
        yield srv, log


def test_serve_alone_opens_two_zoo_models_side_by_side(driver, zoo_server):
    srv, log = zoo_server
    first, second = zoo.SIDE_BY_SIDE
    printed = re.search(r"attnkit serve: (http://\S+) \(models: (.*)\)", log.read_text())
    assert printed and printed.group(2) == ", ".join(zoo.served())
    assert zoo.served()[:2] == [first, second]
    driver.get(printed.group(1))  # the address the command printed
    wait = WebDriverWait(driver, WAIT)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    assert driver.find_element(By.ID, "second").get_attribute("value") == second
    # nothing typed: the page opens on the model's example, decoded by both models
    assert driver.find_element(By.ID, "source").get_attribute("value") == "siebenundneunzig"
    wait.until(lambda d: d.find_element(By.ID, "sbs").is_displayed())
    answer = srv.post("v1/translate", {"model": second, "inputs": ["siebenundneunzig"], "beam": 1})[
        "results"
    ][0]["hypotheses"][0]["output"]
    want = f"{second} (luong-general attention, RNN): {answer}"
    wait.until(lambda d: d.find_element(By.ID, "sbs-b").text == want)
    maps = driver.find_elements(By.CSS_SELECTOR, "#sbs-maps td.hm-cell")
    assert maps, "both attention maps drawn"


STORY = "Mary moved to the bathroom.\nJohn went to the hallway."
POINTS = "0.1,0.1 0.9,0.2 0.5,0.9 0.5,0.5 0.3,0.4 0.8,0.7 0.2,0.8 0.6,0.3 0.4,0.6 0.7,0.5"


def _family_page(driver, srv, name: str, view: str) -> WebDriverWait:
    """The page with the zoo model ``name`` chosen, its ``view`` shown."""
    assert name in zoo.served(), f"attnkit serve alone does not serve {name}"
    driver.get(srv.url)
    wait = WebDriverWait(driver, WAIT)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    Select(driver.find_element(By.ID, "model")).select_by_value(name)
    wait.until(lambda d: d.find_element(By.ID, view).is_displayed())
    return wait


def _text(element_id: str):
    return lambda d: d.find_element(By.ID, element_id).text


def test_the_zoo_translator_opens_on_a_german_caption_in_english(driver, zoo_server):
    """The real-language translator: its view opens on a caption in its source language,
    translated as the API translates it, with the attention map drawn."""
    srv, _ = zoo_server
    caption = _example(srv, "multi30k-de-en")
    wait = _family_page(driver, srv, "multi30k-de-en", "text-view")
    assert _value(driver, "source") == caption and caption.endswith(".")
    request = {"model": "multi30k-de-en", "inputs": [caption], "beam": 1}
    answer = srv.post("v1/translate", request)["results"][0]["hypotheses"][0]["output"]
    assert "book" in answer  # a translation, in English
    wait.until(lambda d: _text("output")(d) == answer)
    assert driver.find_elements(By.CSS_SELECTOR, "#text-results td.hm-cell")


def test_the_zoo_graph_model_explains_a_node_of_cora(driver, zoo_server):
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "cora-gat", "graph-view")
    answer = srv.post("v1/graph/node", {"model": "cora-gat", "node": 0})
    set_value(driver, "graph-node", "0")
    driver.find_element(By.ID, "graph-show").click()
    want = f"node {answer['node']}: label {answer['label']}, predicted {answer['prediction']}"
    wait.until(lambda d: _text("graph-summary")(d).startswith(want))
    assert len(answer["neighbours"]) > 1  # Cora's node 0 has neighbours, all drawn
    dots = driver.find_elements(By.CSS_SELECTOR, "#graph-svg circle")
    assert len(dots) >= len(answer["neighbours"])


def test_the_zoo_sentence_classifier_weighs_the_words(driver, zoo_server):
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "sst2-attention", "sentence-view")
    text = "a gripping , moving film"
    request = {"model": "sst2-attention", "inputs": [text]}
    answer = srv.post("v1/classify_text", request)["results"][0]
    assert answer["label"] == "positive"  # a trained model, not a coin
    set_value(driver, "sentence", text, "input")
    wait.until(lambda d: _text("sentence-label")(d) == answer["label"])
    words = driver.find_elements(By.CSS_SELECTOR, "#sentence-words .word")
    assert [w.text for w in words] == answer["tokens"]


def test_the_zoo_memory_network_answers_where_mary_is(driver, zoo_server):
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "babi-task1", "memory-view")
    answer = srv.post(
        "v1/answer",
        {"model": "babi-task1", "story": STORY.split("\n"), "question": "Where is Mary?"},
    )
    assert answer["answer"] == "bathroom"  # a trained model answers it
    set_value(driver, "story", STORY)
    set_value(driver, "memory-question", "Where is Mary?")
    driver.find_element(By.ID, "memory-ask").click()
    wait.until(lambda d: _text("memory-answer")(d) == "bathroom")
    cells = driver.find_elements(By.CSS_SELECTOR, "#memory-map td.hm-cell")
    weights = answer["record"]["weights"]  # (sentences, hops)
    assert len(weights) == 2 and len(cells) == sum(len(row) for row in weights)


def test_the_zoo_pointer_network_draws_its_hull(driver, zoo_server):
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "pointer-hull10", "pointer-view")
    points = [[float(v) for v in p.split(",")] for p in POINTS.split()]
    answer = srv.post("v1/solve", {"model": "pointer-hull10", "points": points})
    set_value(driver, "pointer-points", POINTS)
    driver.find_element(By.ID, "pointer-solve").click()
    order = "order " + " ".join(map(str, answer["order"]))
    wait.until(lambda d: _text("pointer-summary")(d).startswith(order))
    assert len(driver.find_elements(By.CSS_SELECTOR, "#pointer-plane circle.pointer-point")) == 10


def test_the_zoo_image_model_classifies_a_test_digit(driver, zoo_server, shared_data):
    shared_data("mnist")  # skips, saying so, without $ATTNKIT_DATA_DIR/mnist
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "mnist-ram", "vision-view")
    answer = srv.post("v1/classify", {"model": "mnist-ram", "index": 0})
    wait.until(lambda d: _text("prediction")(d) == answer["prediction"])


def _example(srv, name: str):
    """The example ``GET /v1/models`` gives model ``name``: what its view opens with."""
    listed = {m["name"]: m for m in srv.get("v1/models").json()["models"]}
    return listed[name]["example"]


def _value(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).get_attribute("value")


def _away_and_back(driver, wait: WebDriverWait, name: str, view: str) -> None:
    """Another family's model chosen, then ``name`` again (its view restarted)."""
    other = next(n for n in zoo.served() if n != name)
    Select(driver.find_element(By.ID, "model")).select_by_value(other)
    wait.until(lambda d: not d.find_element(By.ID, view).is_displayed())
    Select(driver.find_element(By.ID, "model")).select_by_value(name)
    wait.until(lambda d: d.find_element(By.ID, view).is_displayed())


def test_every_zoo_view_opens_on_its_example_answered_without_typing(driver, zoo_server):
    """Nothing typed: each family's view opens on its model's example, already answered as the
    API answers that example (the graph a node's neighbours, the sentence its label, the
    memory network where Mary is, the pointer network the order of its points)."""
    srv, _ = zoo_server
    node = _example(srv, "cora-gat")
    assert isinstance(node, int) and 0 <= node  # a node the graph has: the API explains it
    wait = _family_page(driver, srv, "cora-gat", "graph-view")
    answer = srv.post("v1/graph/node", {"model": "cora-gat", "node": node})
    assert _value(driver, "graph-node") == str(node)
    wait.until(lambda d: _text("graph-summary")(d).startswith(f"node {answer['node']}: label"))

    sentence = _example(srv, "sst2-attention")
    wait = _family_page(driver, srv, "sst2-attention", "sentence-view")
    answer = srv.post("v1/classify_text", {"model": "sst2-attention", "inputs": [sentence]})
    assert _value(driver, "sentence") == sentence
    wait.until(lambda d: _text("sentence-label")(d) == answer["results"][0]["label"])
    assert driver.find_elements(By.CSS_SELECTOR, "#sentence-words .word")

    story = _example(srv, "babi-task1")
    wait = _family_page(driver, srv, "babi-task1", "memory-view")
    assert _value(driver, "story") == "\n".join(story["story"])
    assert _value(driver, "memory-question") == story["question"]
    answer = srv.post("v1/answer", {"model": "babi-task1", **story})
    assert answer["answer"] == "bathroom" and not answer["unknown"]  # its words, understood
    wait.until(lambda d: _text("memory-answer")(d) == "bathroom")
    assert driver.find_elements(By.CSS_SELECTOR, "#memory-map td.hm-cell")

    points = _example(srv, "pointer-hull10")
    assert len(points) == 8 and all(len(p) == 2 and 0 <= min(p) <= max(p) <= 1 for p in points)
    wait = _family_page(driver, srv, "pointer-hull10", "pointer-view")
    answer = srv.post("v1/solve", {"model": "pointer-hull10", "points": points})
    order = "order " + " ".join(map(str, answer["order"]))
    wait.until(lambda d: _text("pointer-summary")(d).startswith(order))
    assert len(driver.find_elements(By.CSS_SELECTOR, "#pointer-plane circle.pointer-point")) == 8


def test_what_the_user_typed_is_never_replaced_by_an_example(driver, zoo_server):
    """Typed into a view, then another model and back: the typed input stays, and is what the
    view answers."""
    srv, _ = zoo_server
    wait = _family_page(driver, srv, "sst2-attention", "sentence-view")
    typed = "a dull , tedious movie"
    box = driver.find_element(By.ID, "sentence")
    box.clear()
    box.send_keys(typed)
    _away_and_back(driver, wait, "sst2-attention", "sentence-view")
    assert _value(driver, "sentence") == typed
    answer = srv.post("v1/classify_text", {"model": "sst2-attention", "inputs": [typed]})
    wait.until(lambda d: _text("sentence-label")(d) == answer["results"][0]["label"])

    wait = _family_page(driver, srv, "cora-gat", "graph-view")
    node = driver.find_element(By.ID, "graph-node")
    node.clear()
    node.send_keys("7")
    _away_and_back(driver, wait, "cora-gat", "graph-view")
    assert _value(driver, "graph-node") == "7"
    wait.until(lambda d: _text("graph-summary")(d).startswith("node 7:"))

    wait = _family_page(driver, srv, "babi-task1", "memory-view")
    question = driver.find_element(By.ID, "memory-question")
    question.clear()
    question.send_keys("Where is John?")
    _away_and_back(driver, wait, "babi-task1", "memory-view")
    assert _value(driver, "memory-question") == "Where is John?"
    wait.until(lambda d: _text("memory-answer")(d) == "hallway")

    wait = _family_page(driver, srv, "pointer-hull10", "pointer-view")
    points = driver.find_element(By.ID, "pointer-points")
    points.clear()
    points.send_keys(POINTS)
    _away_and_back(driver, wait, "pointer-hull10", "pointer-view")
    assert _value(driver, "pointer-points") == POINTS
    wait.until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pointer-plane circle.pointer-point")) == 10
    )
