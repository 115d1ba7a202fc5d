"""``attnkit serve`` with no ``--model``: the page the printed address opens shows two models
of the zoo side by side, without a click, and each other family's zoo model answers in its own
view (in headless chromium)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import find_browser, start_server

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_explorer import set_value  # noqa: E402

from attnkit import zoo  # noqa: E402

WAIT = 30


@pytest.fixture(scope="module")
def zoo_server(tmp_path_factory):
    if find_browser() is None:
        pytest.skip("no chromium and chromedriver: apt-get install chromium chromium-driver")
    log = tmp_path_factory.mktemp("serve-zoo") / "serve.log"
    srv = start_server([], log)
    yield srv, log
    srv.process.terminate()
    try:
        srv.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        srv.process.kill()


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
