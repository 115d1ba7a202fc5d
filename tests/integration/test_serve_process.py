"""The real ``attnkit serve`` process: it prints its URL, answers over HTTP, and on SIGTERM
answers every request in flight before it exits 0."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # the unit tests' model
from test_serve_app import train_numbers_model  # noqa: E402

from attnkit.serve import server  # noqa: E402
from attnkit.serve.app import ServeSettings  # noqa: E402

pytestmark = pytest.mark.slow
STARTUP_S = 60


class Served:
    """A running ``attnkit serve``: its process, its URL and the lines it printed."""

    def __init__(self, *argv: str):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnkit", "serve", "--port", "0", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.first = self.lines.get(timeout=STARTUP_S)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    @property
    def url(self) -> str:
        match = re.fullmatch(
            r"attnkit serve: (http://127\.0\.0\.1:\d+/) \(models: (.+)\)", self.first
        )
        assert match, (self.first, self.proc.stderr.read() if self.proc.poll() else "")
        return match.group(1)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return train_numbers_model(tmp_path_factory.mktemp("proc") / "numbers" / "best")


def test_the_process_answers_then_drains_on_sigterm(model_dir):
    served = Served("--model", str(model_dir), "--max-wait-ms", "400")
    try:
        assert served.first.endswith("(models: numbers)")
        with httpx.Client(base_url=served.url, timeout=30) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/v1/models").json()["models"][0]["name"] == "numbers"
            one = client.post("/v1/translate", json={"inputs": ["vier"]}).json()
            assert one["results"][0]["hypotheses"][0]["tokens"][-1] == "</s>"
            texts = ["dreiundzwanzig", "vier", "elf", "neunzig", "zwölf", "achtzehn"]
            with ThreadPoolExecutor(len(texts)) as pool:
                futures = [
                    pool.submit(client.post, "/v1/translate", json={"inputs": [t], "beam": 2})
                    for t in texts
                ]
                time.sleep(0.15)  # sent, and waiting in the batcher's 400 ms window
                served.proc.send_signal(signal.SIGTERM)
                answers = [f.result() for f in futures]
        assert [a.status_code for a in answers] == [200] * len(texts)
        assert [a.json()["results"][0]["input"] for a in answers] == texts
        assert served.proc.wait(timeout=30) == 0
        assert "Traceback" not in served.proc.stderr.read()
    finally:
        if served.proc.poll() is None:
            served.proc.kill()


def test_a_bad_model_directory_is_one_line_and_status_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "attnkit", "serve", "--model", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=STARTUP_S,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("attnkit: error: ") and "Traceback" not in proc.stderr


def test_a_host_other_machines_reach_is_warned_about(model_dir, monkeypatch, capsys):
    assert server.is_local("127.0.0.1") and server.is_local("localhost")
    assert server.is_local("::1") and not server.is_local("0.0.0.0")
    assert not server.is_local("192.168.1.5") and not server.is_local("example.org")
    monkeypatch.setattr(
        server._Server, "run", lambda self, sockets=None: setattr(self, "started", True)
    )
    server.serve(ServeSettings(models=[model_dir], host="0.0.0.0", port=0))
    assert "--host 0.0.0.0: the server is reachable from other machines" in capsys.readouterr().err
    server.serve(ServeSettings(models=[model_dir], port=0))
    assert "warning" not in capsys.readouterr().err
