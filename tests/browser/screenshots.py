"""Screenshots of the explorer page for the README: ``docs/images/serve_*.png``.

    python tests/browser/screenshots.py --text DIR --second DIR --vision DIR [--out docs/images]

starts ``attnkit serve`` with the three checkpoints (a seq2seq model, a second one for the
side-by-side view, a vision model), drives headless chromium through the text view (heatmap,
top-k, n-best and beam tree), the side-by-side view and the vision view, and saves a PNG of each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import new_driver, start_server  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from test_explorer import set_value, wait  # noqa: E402

SOURCE = "hundertdreiundvierzig"


def text_views(driver, out: Path) -> None:
    set_value(driver, "beam", 4)
    set_value(driver, "nbest", 3)
    driver.find_element(By.ID, "source").send_keys(SOURCE)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#beamtree g.leaf"), "the decoding")
    cells = driver.find_elements(By.CSS_SELECTOR, "#heatmap td.hm-cell")
    ActionChains(driver).move_to_element(cells[len(cells) // 3]).perform()
    time.sleep(0.3)
    driver.save_screenshot(str(out / "serve_text.png"))
    Select(driver.find_element(By.ID, "second")).select_by_index(1)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#sbs-maps td"), "the second model")
    time.sleep(0.5)
    sbs = driver.find_element(By.ID, "sbs")
    driver.execute_script("arguments[0].scrollIntoView()", sbs)
    sbs.screenshot(str(out / "serve_side_by_side.png"))


def vision_view(driver, out: Path, name: str) -> None:
    Select(driver.find_element(By.ID, "model")).select_by_value(name)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#overlay .ov-cell"), "the image")
    set_value(driver, "image-index", 7)
    time.sleep(1.5)
    cells = driver.find_elements(By.CSS_SELECTOR, "#overlay .ov-cell")
    ActionChains(driver).move_to_element(cells[len(cells) // 2]).perform()
    time.sleep(0.3)
    driver.save_screenshot(str(out / "serve_vision.png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, required=True, help="a seq2seq checkpoint")
    parser.add_argument("--second", type=Path, required=True, help="another seq2seq checkpoint")
    parser.add_argument("--vision", type=Path, required=True, help="a vision checkpoint")
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    models = [("numbers", args.text), ("other", args.second), ("digits", args.vision)]
    server = start_server(models, args.out / "serve-screenshots.log")
    driver = new_driver(1280, 820)
    try:
        driver.get(server.url)
        wait(
            driver,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready"),
            "the model list",
        )
        text_views(driver, args.out)
        vision_view(driver, args.out, "digits")
    finally:
        driver.quit()
        server.process.terminate()
        (args.out / "serve-screenshots.log").unlink(missing_ok=True)
    for path in sorted(args.out.glob("serve_*.png")):
        print(path, f"{path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
