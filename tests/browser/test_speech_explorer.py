"""The explorer's speech view in headless chromium, against a real ``attnkit serve`` of an
untrained tiny speech model: a typed number is synthesised (eSpeak NG), heard and drawn (the
spectrogram, the weights, the spoken words), and seeking its audio moves the cursor."""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
if importlib.util.find_spec("espeakng_loader") is None:
    pytest.skip("pip install attnkit[speech] (eSpeak NG) to synthesise", allow_module_level=True)
from conftest import find_browser, start_server  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from attnkit.checkpoint import write_checkpoint  # noqa: E402
from attnkit.families.speech.bundle import build_model  # noqa: E402
from attnkit.families.speech.config import parse_config  # noqa: E402


@pytest.fixture(scope="module")
def speech_server(tmp_path_factory):
    if find_browser() is None:
        pytest.skip("no chromium and chromedriver: apt-get install chromium chromium-driver")
    root = tmp_path_factory.mktemp("speech-serve")
    cfg = parse_config(
        {
            "family": "speech",
            "data": {"languages": ["de", "en"], "max_number": 99, "directory": str(root / "a")},
            "model": {"listener_hidden": 16, "speller_hidden": 32, "attention_dim": 16},
        }
    )
    torch.manual_seed(0)
    best = root / "las" / "best"
    write_checkpoint(best, "speech", build_model(cfg).state_dict(), cfg.to_dict(), {})
    server = start_server([("las", best)], root / "serve.log")
    yield server
    server.process.terminate()


def test_a_typed_number_is_heard_drawn_and_played(driver, speech_server):
    driver.get(speech_server.url)
    wait = WebDriverWait(driver, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    assert driver.find_element(By.ID, "speech-view").is_displayed()
    # the view opens on its example (97) and answers it: waited for, so that its drawing cannot
    # replace the one of the number typed next
    wait.until(lambda d: "siebenundneunzig" in d.find_element(By.ID, "speech-spoken").text)
    number = driver.find_element(By.ID, "speech-number")
    number.clear()
    number.send_keys("85")
    driver.find_element(By.ID, "speech-hear").click()  # de, the first language
    wait.until(lambda d: "fünfundachtzig" in d.find_element(By.ID, "speech-spoken").text)
    view = driver.find_element(By.ID, "speech-result")
    canvas = view.find_element(By.CSS_SELECTOR, "canvas.attnkit-spectrogram")
    assert int(canvas.get_attribute("width")) > 100
    outputs = view.find_elements(By.CSS_SELECTOR, ".attnkit-output")
    heard = driver.find_element(By.ID, "speech-heard").text
    assert len(outputs) >= 1 and heard  # untrained: any digits, and a row per output
    page = driver.find_element(By.ID, "speech-view").text
    assert page.count("heard") == 1 and "attention of each output" in page  # said once
    audio = view.find_element(By.CSS_SELECTOR, "audio.attnkit-audio")
    wait.until(lambda d: d.execute_script("return arguments[0].readyState", audio) >= 1)
    driver.execute_script("arguments[0].currentTime = 0.5", audio)
    wait.until(lambda d: view.get_attribute("data-frame") == str(int(0.5 * 22_050 / 220)))
    driver.find_element(By.ID, "speech-number").clear()
    driver.find_element(By.ID, "speech-number").send_keys("12x")
    driver.find_element(By.ID, "speech-hear").click()
    wait.until(lambda d: "at most 6 digits" in d.find_element(By.ID, "error").text)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [] or all("422" in e["message"] for e in errors)


def test_the_view_opens_on_the_models_example_heard(driver, speech_server):
    """Nothing typed: the number box holds the model's example in its language, synthesised and
    heard at once (its spoken words shown)."""
    from num2words import num2words

    example = speech_server.get("v1/models").json()["models"][0]["example"]
    driver.get(speech_server.url)
    wait = WebDriverWait(driver, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    assert driver.find_element(By.ID, "speech-number").get_attribute("value") == example["number"]
    language = driver.find_element(By.ID, "speech-language").get_attribute("value")
    assert language == example["language"]
    words = num2words(int(example["number"]), lang=language)
    wait.until(lambda d: words in d.find_element(By.ID, "speech-spoken").text)
    assert driver.find_elements(By.CSS_SELECTOR, "#speech-result canvas.attnkit-spectrogram")
