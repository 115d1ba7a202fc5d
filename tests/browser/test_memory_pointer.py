"""The explorer's memory-network and pointer views in headless chromium, against a real
``attnkit serve`` of two tiny untrained models: a story and a question give the hop-by-hop map
(the supporting fact outlined), points give the chosen order over them and the pointer heatmap;
what the page draws is what the API answers for the same request."""

from __future__ import annotations

import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from conftest import require_browser, start_server  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from test_explorer import set_value, severe, wait, wait_cells  # noqa: E402

BABI = "1 Mary moved to the bathroom.\n2 John moved to the hallway.\n3 Where is Mary?\tbathroom\t1"
POINTS = "0.1,0.1 0.9,0.2 0.5,0.9 0.5,0.5 0.3,0.4"


def memnet_checkpoint(directory):
    import torch

    from attnkit.data.babi_vectors import BabiVocab
    from attnkit.families.memnet.adapter import save_checkpoint
    from attnkit.families.memnet.config import parse_config
    from attnkit.models.memn2n import MemN2N
    from attnkit.training.state import TrainerState

    words = ["<empty>", "bathroom", "hallway", "is", "john", "mary", "moved", "the", "to", "where"]
    model = {"memory": "adjacent", "dim": 6, "hops": 3}
    cfg = parse_config({"family": "memnet", "data": {"memory_size": 4}, "model": model})
    torch.manual_seed(0)
    net = MemN2N(cfg.model, len(words), cfg.data.memory_size)
    save_checkpoint(directory, net, cfg, BabiVocab(words, 6, 4, 4), TrainerState())
    return directory


def pointer_checkpoint(directory, task: str = "hull", points: int = 5):
    import torch

    from attnkit.checkpoint import write_checkpoint
    from attnkit.families.pointer.bundle import build_model
    from attnkit.families.pointer.config import parse_config

    model = {"hidden": 8, "attention_dim": 8}
    data = {"task": task, "points": points}
    cfg = parse_config({"family": "pointer", "data": data, "model": model})
    torch.manual_seed(0)
    write_checkpoint(directory, "pointer", build_model(cfg).state_dict(), cfg.to_dict(), {})
    return directory


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_browser()
    root = tmp_path_factory.mktemp("memory-pointer")
    models = [
        ("babi", memnet_checkpoint(root / "babi" / "best")),
        ("hull", pointer_checkpoint(root / "hull" / "best")),
        ("sort", pointer_checkpoint(root / "sort" / "best", "sort", 10)),
    ]
    with start_server(models, root / "serve.log") as srv:
        yield srv


@pytest.fixture
def page(driver, server):
    driver.get(server.url)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "list")
    severe(driver)
    yield driver
    assert severe(driver) == []


def test_a_story_and_its_question_draw_each_hops_attention(page, server):
    assert page.find_element(By.ID, "memory-view").is_displayed()  # the first model's view
    set_value(page, "story", BABI)
    page.find_element(By.ID, "memory-ask").click()
    answer = server.post("v1/answer", {"model": "babi", "story": BABI.split("\n")})
    drawn = wait_cells(page, 2 * 3, "#memory-map td.hm-cell")  # 2 sentences x 3 hops
    weights = [float(c.get_attribute("data-w")) for c in drawn]
    expected = [w for row in answer["record"]["weights"] for w in row]
    assert weights == pytest.approx(expected, abs=1e-4)
    outlined = page.find_elements(By.CSS_SELECTOR, "#memory-map td.hm-gold")
    assert {c.get_attribute("data-i") for c in outlined} == {"0"}  # the supporting fact
    assert len(outlined) == 3  # at every hop
    key = page.find_element(By.CSS_SELECTOR, "#memory-map .hm-gold-key").text
    assert key == "outlined: a supporting fact of the question"
    assert page.find_element(By.ID, "memory-answer").text == answer["answer"]
    rows = page.find_elements(By.CSS_SELECTOR, "#memory-map tbody th")
    assert rows[0].text == "* 1 Mary moved to the bathroom."
    set_value(page, "memory-question", "")
    set_value(page, "story", "Mary moved to the bathroom.")
    page.find_element(By.ID, "memory-ask").click()  # no question: one line naming the field
    error = page.find_element(By.ID, "error")
    wait(page, lambda d: error.is_displayed(), "the error")
    assert error.text.startswith("question: ") and len(error.text.splitlines()) == 1
    assert all("status of 4" in m for m in severe(page))


def test_points_draw_the_chosen_order_beside_the_pointer_heatmap(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("hull")
    assert page.find_element(By.ID, "pointer-view").is_displayed()
    assert not page.find_element(By.ID, "memory-view").is_displayed()
    set_value(page, "pointer-points", POINTS)
    page.find_element(By.ID, "pointer-solve").click()
    points = [[float(v) for v in p.split(",")] for p in POINTS.split()]
    answer = server.post("v1/solve", {"model": "hull", "points": points})
    steps = len(answer["attention"])
    drawn = wait_cells(page, steps * 6, "#pointer-map td.hm-cell")  # end + 5 points
    weights = [float(c.get_attribute("data-w")) for c in drawn]
    assert weights == pytest.approx([w for row in answer["attention"] for w in row], abs=1e-4)
    dots = page.find_elements(By.CSS_SELECTOR, "#pointer-plane circle.pointer-point")
    assert len(dots) == 5
    path = page.find_elements(By.CSS_SELECTOR, "#pointer-plane polyline.pointer-path")
    assert len(path) == (1 if answer["order"] else 0)
    summary = page.find_element(By.ID, "pointer-summary").text
    assert summary.startswith("order " + " ".join(map(str, answer["order"])))
    plane = page.find_element(By.CSS_SELECTOR, "#pointer-plane svg")
    page.execute_script(  # a click in the square adds a sixth point and solves again
        "var r = arguments[0].getBoundingClientRect();"
        "arguments[0].dispatchEvent(new MouseEvent('click', {clientX: r.left + 300,"
        " clientY: r.top + 60, bubbles: true}));",
        plane,
    )
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "circle.pointer-point")) == 6, "6")
    assert len(page.find_element(By.ID, "pointer-points").get_attribute("value").split()) == 6
    beam = page.find_element(By.ID, "pointer-beam")
    set_value(page, "pointer-beam", int(beam.get_attribute("max")) + 2)  # past the limit
    assert beam.get_attribute("value") == beam.get_attribute("max")  # shows the beam sent


LABEL_BOXES = """var texts = document.querySelectorAll('#pointer-plane text');
return Array.from(texts).map(function (t) {
  var r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, t.textContent];
});"""


def test_step_labels_on_a_line_of_sorted_numbers_do_not_overlap(page, server):
    Select(page.find_element(By.ID, "model")).select_by_value("sort")
    numbers = " ".join(f"0.{n}" for n in range(10, 20))  # ten numbers 3 pixels apart
    set_value(page, "pointer-points", numbers)
    page.find_element(By.ID, "pointer-solve").click()
    # the view opens on its own example (fewer points): wait for the answer to these ten
    wait(
        page,
        lambda d: (
            d.find_element(By.ID, "pointer-summary").text.startswith("order")
            and len(d.execute_script(LABEL_BOXES)) == 10
        ),
        "the order of the ten numbers",
    )
    boxes = page.execute_script(LABEL_BOXES)
    assert sorted(int(b[4].split()[0]) for b in boxes) == list(range(10))  # every point named
    plane = page.find_element(By.CSS_SELECTOR, "#pointer-plane svg").rect
    for left, top, right, bottom, text in boxes:
        assert plane["x"] <= left and right <= plane["x"] + plane["width"], text
        assert plane["y"] <= top and bottom <= plane["y"] + plane["height"], text
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
            assert apart, f"{a[4]!r} overlaps {b[4]!r}"


def test_a_notebook_answer_shows_the_story_with_its_spaces(driver, tmp_path):
    import numpy as np

    from attnkit.families.memnet.model import Answer

    story = ["Mary moved to the bathroom.", "John went to the hallway."]
    weights = np.array([[0.9, 0.1], [0.7, 0.3]])  # (hops, sentences)
    answer = Answer("Where is Mary?", "bathroom", story, weights, supporting=[0])
    page = tmp_path / "answer.html"
    page.write_text("<!doctype html><meta charset=utf-8>" + answer._repr_html_(), "utf-8")
    driver.get(page.as_uri())
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "td.hm-cell")) == 4, "the map")
    rows = driver.find_elements(By.CSS_SELECTOR, ".attnkit-view tbody th")
    assert [row.text for row in rows] == story  # spaces, not U+2423
    # the supporting fact is outlined, and a key under the map says what an outline means
    assert len(driver.find_elements(By.CSS_SELECTOR, ".attnkit-view td.hm-gold")) == 2
    (key,) = driver.find_elements(By.CSS_SELECTOR, ".attnkit-view .hm-gold-key")
    assert key.text == "outlined: gold, where the task says the output comes from"
    swatch = key.find_element(By.CSS_SELECTOR, "span.swatch")
    assert "239, 68, 68" in swatch.value_of_css_property("box-shadow")  # the outline's red
    answer.supporting = []  # no gold: no key
    page.write_text("<!doctype html><meta charset=utf-8>" + answer._repr_html_(), "utf-8")
    driver.get(page.as_uri())
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "td.hm-cell")) == 4, "the map")
    assert driver.find_elements(By.CSS_SELECTOR, ".hm-gold-key") == []
    assert severe(driver) == []
