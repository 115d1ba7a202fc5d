"""``attnkit serve --model zoo:mnist-ram --model zoo:strips-reader``: the explorer's glimpse
stepper shows the zoo's RAM glimpse by glimpse, and its reader overlay the zoo reader's digits
step by step with the map of each (headless chromium; MNIST from ``$ATTNKIT_DATA_DIR/mnist``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import require_browser, start_server

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from attnkit import zoo  # noqa: E402

WAIT = 30


@pytest.fixture(scope="module")
def vision_zoo_server(tmp_path_factory):
    mnist = Path(os.environ.get("ATTNKIT_DATA_DIR", "").strip() or "/nonexistent") / "mnist"
    if not mnist.is_dir():
        pytest.skip(f"no MNIST at {mnist}: set ATTNKIT_DATA_DIR to a directory holding mnist/")
    require_browser()
    models = [(name, zoo.resolve(f"zoo:{name}")) for name in ("mnist-ram", "strips-reader")]
    with start_server(models, tmp_path_factory.mktemp("serve-zoo-vision") / "serve.log") as srv:
        yield srv


def _open(driver, srv, model: str):
    driver.get(srv.url)
    wait = WebDriverWait(driver, WAIT)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"))
    Select(driver.find_element(By.ID, "model")).select_by_value(model)
    return wait


def test_the_zoo_ram_steps_through_its_glimpses(driver, vision_zoo_server):
    srv = vision_zoo_server
    answer = srv.post("v1/classify", {"model": "mnist-ram", "index": 0})
    n = len(answer["steps"])
    wait = _open(driver, srv, "mnist-ram")
    label = driver.find_element(By.ID, "step-label")
    wait.until(lambda d: label.text == f"step 1/{n}")
    assert driver.find_element(By.ID, "prediction").text == answer["prediction"]
    assert driver.find_elements(By.CSS_SELECTOR, "#overlay canvas.ov-glimpses")
    driver.execute_script(
        "var e = document.getElementById('step'); e.value = arguments[0];"
        "e.dispatchEvent(new Event('input'));",
        str(n - 1),
    )
    wait.until(lambda d: label.text == f"step {n}/{n}")


def test_the_zoo_reader_shows_each_digit_it_reads_over_the_strip(driver, vision_zoo_server):
    srv = vision_zoo_server
    answer = srv.post("v1/classify", {"model": "strips-reader", "index": 0})
    first = answer["steps"][0]
    wait = _open(driver, srv, "strips-reader")
    label = driver.find_element(By.ID, "step-label")
    wait.until(lambda d: label.text == f"step 1/{len(answer['steps'])}: {first['token']}")
    assert driver.find_element(By.ID, "prediction").text == answer["prediction"]
    regions = len(first["attention"]) * len(first["attention"][0])
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#overlay .ov-cell")) == regions)
