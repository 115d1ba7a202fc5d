"""A head summary's inline view (``HeadSummary.html``) in headless chromium: the picture loads,
and a click on a score's column sorts the heads by it, highest first, again lowest first."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from conftest import new_driver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from attnkit.explain.head_summary import summarize  # noqa: E402


def test_a_click_on_a_column_sorts_the_heads(tmp_path):
    size = 6
    sink = torch.zeros(size, size)
    sink[:, 0] = 1.0
    uniform = torch.full((size, size), 1.0 / size)
    half = (sink + uniform) / 2
    page = tmp_path / "heads.html"
    fragment = summarize(torch.stack([uniform, sink, half])[None]).html()
    page.write_text(f"<!doctype html><meta charset=utf-8>{fragment}", encoding="utf-8")
    driver = new_driver()
    try:
        driver.get(page.as_uri())
        picture = driver.find_element(By.CSS_SELECTOR, ".attnkit-heads img")
        assert driver.execute_script("return arguments[0].naturalWidth", picture) > 0

        def heads() -> list[str]:
            rows = driver.find_elements(By.CSS_SELECTOR, ".attnkit-heads tbody tr")
            return [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows]

        assert heads() == ["1", "2", "3"]
        (sink_column,) = [
            th
            for th in driver.find_elements(By.CSS_SELECTOR, ".attnkit-heads th")
            if th.text == "sink"
        ]
        sink_column.click()
        assert heads() == ["2", "3", "1"]  # the sink head, the half one, the uniform one
        sink_column.click()
        assert heads() == ["1", "3", "2"]
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()
