"""The explorer page and the reports in a real browser: Debian's headless chromium driven by
Selenium, against the real ``attnkit serve`` process on tiny models trained here.

Every test skips, saying why, when chromium or chromedriver (``apt-get install chromium
chromium-driver``) or the selenium package is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
NO_BROWSER = "no chromium and chromedriver: apt-get install chromium chromium-driver"
START_SECONDS = 90  # loading torch and the checkpoints on a busy machine


def find_browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) paths, or None."""
    browser = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def require_browser() -> tuple[str, str]:
    """(chromium, chromedriver) paths; skips the test, saying how to install them, without."""
    found = find_browser()
    if found is None:
        pytest.skip(NO_BROWSER)
    return found


def new_driver(width: int = 1400, height: int = 1000):
    """A headless chromium that keeps the console log; skips the test when there is none."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    from selenium.webdriver.chrome.service import Service

    found = require_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(found[1]), options=options)


TINY_TRANSFORMER = {
    "arch": "transformer",
    "embedding_dim": 16,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "heads": 2,
    "ff_dim": 32,
    "dropout": 0.0,
}


def train_numbers(out: Path, attention: str) -> Path:
    """A tiny numbers translator (German and English words to digits), a few seconds of
    training; its checkpoint directory. ``attention`` "transformer" trains a two-layer,
    two-head Transformer."""
    from attnkit.families.seq2seq.config import experiment_from_dict
    from attnkit.families.seq2seq.evaluate import evaluate_translator
    from attnkit.families.seq2seq.trainer import train_experiment

    cfg = experiment_from_dict(
        {
            "name": f"browser-{attention}",
            "output_dir": str(out),
            "data": {
                "task": "numbers",
                "direction": "words2digits",
                "max_number": 99,
                "languages": ["de", "en"],
            },
            "model": TINY_TRANSFORMER
            if attention == "transformer"
            else {
                "attention": attention,
                "embedding_dim": 16,
                "encoder_hidden": 24,
                "decoder_hidden": 32,
                "attention_dim": 16,
                "dropout": 0.0,
            },
            "train": {"epochs": 4, "batch_size": 16},
        },
        [],
        source="tests/browser",
    )
    return train_experiment(cfg, dev_scorer=evaluate_translator)


def text_checkpoint(directory: Path) -> Path:
    """An untrained sentence classifier (BiLSTM, additive attention) over a few words."""
    import torch

    from attnkit.data.vocab import Vocab
    from attnkit.families.text import bundle as tckpt
    from attnkit.families.text.config import parse_config
    from attnkit.training.state import TrainerState

    cfg = parse_config(
        {
            "family": "text",
            "data": {
                "task": "tsv",
                "train": "t",
                "dev": "d",
                "test": "e",
                "labels": ["neg", "pos"],
            },
            "model": {"embedding_dim": 8, "hidden": 6},
        }
    )
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "gripping", "film"])
    torch.manual_seed(0)
    bundle = tckpt.TextBundle(cfg, vocab, ["neg", "pos"], None)
    bundle.model = tckpt.build_model(cfg, vocab, bundle.labels)
    tckpt.save(directory, bundle, None, TrainerState(), resumable=False)
    return directory


def write_digits(directory: Path, n: int = 12) -> Path:
    """An MNIST-format test split of ``n`` random-stroke 28x28 images, labels 0..9."""
    import struct

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    images = (rng.random((n, 28, 28)) > 0.8).astype(np.uint8) * 255
    for name, array, magic in (
        ("t10k-images-idx3-ubyte", images, 2051),
        ("t10k-labels-idx1-ubyte", np.arange(n) % 10, 2049),
    ):
        header = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
        (directory / name).write_bytes(header + array.astype(np.uint8).tobytes())
    return directory


VISION_MODELS = {
    "attention_pooling": {"type": "attention_pooling", "channels": [4, 8], "attention_hidden": 4},
    "ram": {"type": "ram", "glimpses": 3, "hidden": 16, "glimpse_hidden": 8, "location_hidden": 8},
}


def vision_checkpoint(out: Path, digits: Path, model_type: str) -> Path:
    """An (untrained) digit classifier of ``model_type`` reading ``digits``: what the page
    shows of it (its prediction, attention or glimpses) is whatever the weights say."""
    import torch

    from attnkit.checkpoint import write_checkpoint
    from attnkit.families.vision.config import parse_config
    from attnkit.families.vision.kinds import MODEL_TYPES

    config = {
        "family": "vision",
        "data": {"task": "mnist", "directory": str(digits), "verify": False, "dev_size": 10},
        "model": VISION_MODELS[model_type],
    }
    cfg = parse_config(config)
    torch.manual_seed(0)
    model = MODEL_TYPES[model_type].build(cfg.model)
    write_checkpoint(out, "vision", model.state_dict(), cfg.to_dict(), {})
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running ``attnkit serve``; ``with start_server(...) as server:`` stops it at the end."""

    url: str  # ends with "/"
    process: subprocess.Popen

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM, and SIGKILL where the server has not ended 15 s later."""
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def post(self, path: str, body: dict) -> dict:
        response = httpx.post(self.url + path, json=body, timeout=60)
        response.raise_for_status()
        return response.json()

    def get(self, path: str):
        response = httpx.get(self.url + path, timeout=60)
        response.raise_for_status()
        return response


def start_server(models: list[tuple[str, Path]], log: Path) -> Server:
    """``python -m attnkit serve`` on a free port with ``models`` (name, directory); waits for
    /healthz. A server that does not come up fails the test with its log."""
    port = free_port()
    argv = [sys.executable, "-m", "attnkit", "serve", "--port", str(port)]
    for name, directory in models:
        argv += ["--model", str(directory), "--name", name]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_SRC), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
    }
    out = log.open("w")
    process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"attnkit serve exited ({process.returncode}):\n{log.read_text()}")
        try:
            if httpx.get(url + "healthz", timeout=2).status_code == 200:
                return Server(url, process)
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    pytest.fail(f"attnkit serve did not answer /healthz in {START_SECONDS} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def driver():
    d = new_driver()
    yield d
    d.quit()


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory):
    """(name, checkpoint) of the models the server loads: two numbers translators with other
    attention, a Transformer, two digit classifiers: attention pooling and RAM (glimpses), and a
    sentence classifier."""
    require_browser()
    root = tmp_path_factory.mktemp("browser-models")
    digits = write_digits(root / "mnist")
    return [
        ("numbers", train_numbers(root / "bahdanau", "bahdanau")),
        ("general", train_numbers(root / "general", "luong-general")),
        ("transformer", train_numbers(root / "transformer", "transformer")),
        ("digits", vision_checkpoint(root / "pool" / "best", digits, "attention_pooling")),
        ("glimpses", vision_checkpoint(root / "ram" / "best", digits, "ram")),
        ("sentences", text_checkpoint(root / "text" / "best")),
    ]


@pytest.fixture(scope="session")
def server(checkpoints, tmp_path_factory):
    with start_server(checkpoints, tmp_path_factory.mktemp("serve") / "serve.log") as srv:
        yield srv
