"""The inline view of audio heard, in headless chromium: the spectrogram and the weights are
drawn on a canvas, the audio player holds the embedded WAV, and seeking the audio moves the
cursor to the frame heard and highlights the output weighing that frame most. The transcript is
made by hand (weights peaking at known frames): no model, no eSpeak."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from attnkit.families.speech.model import Transcript  # noqa: E402

RATE, HOP, STRIDE = 22_050, 220, 4


def _transcript() -> Transcript:
    """One second of tone; 100 feature frames, 25 listener frames; output u weighs listener
    frames PEAKS[u] most."""
    time = np.arange(RATE) / RATE
    samples = (0.3 * np.sin(2 * np.pi * 440 * time)).astype(np.float32)
    features = np.random.default_rng(1).normal(size=(100, 40)).astype(np.float32)
    weights = np.full((3, 25), 0.01)
    weights[0, 15:20] = weights[1, 3:8] = weights[2, 22:] = 1.0
    weights /= weights.sum(1, keepdims=True)
    words = [("ninety", 10, 35), ("seven", 50, 80)]
    return Transcript("97", ["9", "7", "</s>"], weights, features, STRIDE, words, samples)


def test_seeking_the_audio_moves_the_cursor_and_highlights_the_attending_output(driver, tmp_path):
    page = _transcript().show()
    try:
        driver.get(page.as_uri())
        wait = WebDriverWait(driver, 30)
        view = driver.find_element(By.CSS_SELECTOR, "div.attnkit-view")
        assert not view.find_elements(By.CSS_SELECTOR, "img.attnkit-static")  # replaced live
        canvas = view.find_element(By.CSS_SELECTOR, "canvas.attnkit-spectrogram")
        assert canvas.get_attribute("height") == str(40 * 3 + 4 + 3 * 16)
        line = view.find_element(By.CSS_SELECTOR, ".attnkit-line").text
        assert line.startswith("heard: 9 7 </s>")  # inline, the view itself says what was heard
        audio = view.find_element(By.CSS_SELECTOR, "audio.attnkit-audio")
        wait.until(lambda d: d.execute_script("return arguments[0].readyState", audio) >= 1)
        assert driver.execute_script("return arguments[0].duration", audio) == pytest.approx(
            1, 0.01
        )
        cursor = view.find_element(By.CSS_SELECTOR, "div.attnkit-cursor")
        for seconds, output in ((0.7, 0), (0.2, 1), (0.95, 2)):
            driver.execute_script("arguments[0].currentTime = arguments[1]", audio, seconds)
            frame = int(seconds * RATE / HOP)
            wait.until(lambda d, f=frame: view.get_attribute("data-frame") == str(f))
            assert view.get_attribute("data-output") == str(output)
            now = view.find_elements(By.CSS_SELECTOR, ".attnkit-output.attnkit-now")
            assert [tag.text for tag in now] == [["9", "7", "</s>"][output]]
            left = float(cursor.value_of_css_property("left").removesuffix("px"))
            assert left == 34 + frame * 4  # label column, then 4 px per frame (100 frames)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
    finally:
        page.unlink()
