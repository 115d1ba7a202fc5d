"""``attnkit serve`` with no ``--model``: the page the printed address opens shows two models
of the zoo side by side, without a click (in headless chromium)."""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import find_browser, start_server

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

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
    assert printed and printed.group(2) == f"{first}, {second}"
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
