"""A run in a real Jupyter kernel (nbclient, ipykernel): one line that rewrites itself, the
evaluations shown on it, no widget warning, and a handful of printed lines however many
evaluations the run makes. The run is the toy family's (``tests/unit/toyfamily``) through the
one driver every family trains in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="pip install nbformat (the test extras)")
nbclient = pytest.importorskip("nbclient", reason="pip install nbclient (the test extras)")
pytest.importorskip("ipykernel", reason="pip install ipykernel (the test extras)")

TOY = Path(__file__).parents[1] / "unit"

CELL = """
import sys, warnings
from pathlib import Path
sys.path.insert(0, {toy!r})
warnings.simplefilter("always")
from toyfamily.train import ToyAdapter
from attnkit.training.run import Plan, Started, TrainSettings, run
from attnkit.training.state import TrainerState

out = Path({out!r})
def start(context):
    context.log("training the toy family")
    return Started(ToyAdapter(out, {{}}, 5.0), TrainerState(planned_epochs=40))

run(Plan(out, TrainSettings(epochs=40), "lists"), start)
"""


def test_a_run_in_a_notebook_is_one_updating_line(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL.format(toy=str(TOY), out=str(tmp_path / "run")))]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute(cwd=str(tmp_path))
    outputs = nb.cells[0].outputs
    assert not [o for o in outputs if o["output_type"] == "error"], json.dumps(outputs)[:2000]
    err = "".join(o["text"] for o in outputs if o.get("name") == "stderr")
    assert "TqdmWarning" not in err and "IProgress" not in err
    assert "\r" in err  # the progress line rewrites itself
    assert "update 8 (epoch 1/40): dev mean_abs_error" in err  # an evaluation, shown on it
    printed = [line.rsplit("\r", 1)[-1] for line in err.split("\n")]
    printed = [line for line in printed if line.strip()]
    # 40 evaluations, and printed lines only for the setup and the end
    assert printed[0] == "training the toy family", printed
    assert printed[-1].startswith("done (epochs): best dev mean_abs_error "), printed
    assert len(printed) <= 3, printed
    logged = (tmp_path / "run" / "train.log").read_text(encoding="utf-8")
    assert logged.count(": dev mean_abs_error ") >= 2  # the log keeps what the line showed
