"""The explorer's saliency panel and gold view, in headless chromium against a real ``attnkit
serve`` (the tiny models of conftest.py): saliency on its own labelled scale, each row scaled to
its maximum on request; and for a wrong output, why no gold links are shown and the gold links
of the right output the user gives, written by the model forced."""

from __future__ import annotations

import pytest

pytest.importorskip("selenium", reason="pip install selenium (the browser tests drive chromium)")
from num2words import num2words  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from test_explorer import body, cells, severe, type_source, wait, wait_cells  # noqa: E402


@pytest.fixture
def page(driver, server):
    """The page freshly loaded, its model list in; no console errors by the end of the test."""
    driver.get(server.url)
    wait(
        driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"), "models"
    )
    severe(driver)  # start the test's log empty
    yield driver
    assert severe(driver) == []


def _legends(driver) -> list[str]:
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#heatmap .hm-legend")]


def test_saliency_has_its_own_scale_and_normalises_each_row_on_request(page, server):
    info = server.get("v1/models").json()["models"][0]
    assert info["explain"], "the numbers model explains"
    assert not page.find_element(By.ID, "normalise-label").is_displayed()
    type_source(page)
    page.find_element(By.ID, "saliency").click()
    result = server.post("v1/translate", body("numbers", explain=True))["results"][0]
    size = len(result["hypotheses"][0]["tokens"]) * len(result["source_tokens"])
    wait_cells(page, 2 * size)
    assert any(text.endswith(" saliency") for text in _legends(page))
    toggle = page.find_element(By.ID, "saliency-normalise")
    assert toggle.is_displayed() and not toggle.is_selected()
    toggle.click()
    rows = [[w / max(abs(v) for v in row) for w in row] for row in result["saliency"]]
    want = [w for row in rows for w in row]

    def normalised(d):
        got = [float(c.get_attribute("data-w")) for c in cells(d)]
        return len(got) == 2 * size and got[size:] == pytest.approx(want, abs=1e-3)

    wait(page, normalised, "each saliency row divided by its maximum")
    assert all(max(row) == pytest.approx(1.0) for row in rows)
    assert any("saliency / row max" in text for text in _legends(page))
    attention = [w for row in result["hypotheses"][0]["attention"] for w in row]
    got = [float(c.get_attribute("data-w")) for c in cells(page)][:size]
    assert got == pytest.approx(attention, abs=1e-3)  # the attention is left as it was


def _a_wrong_output(server) -> tuple[str, str, str]:
    """(source, the model's wrong output, the right one): the first German or English number
    word the tiny model gets wrong."""
    pairs = [(num2words(n, lang=lang), str(n)) for lang in ("de", "en") for n in range(20, 100)]
    for start in range(0, len(pairs), 64):
        chunk = pairs[start : start + 64]
        answer = server.post("v1/translate", {"model": "numbers", "inputs": [s for s, _ in chunk]})
        for (source, right), result in zip(chunk, answer["results"]):
            output = result["hypotheses"][0]["output"]
            if output != right:
                return source, output, right
    raise AssertionError("the tiny model is right on every number from 20 to 99")


def test_a_wrong_output_says_why_no_gold_links_and_offers_the_rights_ones(page, server):
    source, output, right = _a_wrong_output(server)
    type_source(page, source)
    page.find_element(By.ID, "gold").click()
    note = page.find_element(By.ID, "gold-note")
    wait(page, lambda d: note.is_displayed(), "the note: why no gold links are shown")
    assert "not the right one" in note.text
    assert not cells(page, "#heatmap td.hm-gold")  # the wrong output has none
    page.find_element(By.ID, "reference").send_keys(right)
    page.find_element(By.ID, "show-reference").click()
    want = server.post("v1/translate", body("numbers", source, gold=True, reference=right))
    ref = want["results"][0]["reference"]
    assert ref["gold"], "the right output has gold links"
    n = len(ref["tokens"]) * len(want["results"][0]["source_tokens"])
    got = wait_cells(page, n, "#reference-map td.hm-cell")
    weights = [float(c.get_attribute("data-w")) for c in got]
    assert weights == pytest.approx([w for row in ref["attention"] for w in row], abs=1e-3)
    gold = cells(page, "#reference-map td.hm-gold")
    spots = {(int(c.get_attribute("data-i")), int(c.get_attribute("data-j"))) for c in gold}
    assert spots == {tuple(link) for link in ref["gold"]}
    title = page.find_element(By.ID, "reference-map").text
    assert f"right output {right}, forced" in title
    type_source(page, source + "x")  # another source: the right output given is dropped
    wait(page, lambda d: not cells(d, "#reference-map td.hm-cell"), "the reference map cleared")
    assert page.find_element(By.ID, "reference").get_attribute("value") == ""
