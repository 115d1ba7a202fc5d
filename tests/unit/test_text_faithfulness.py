"""``attnkit faithfulness`` and ``TextModel.faithfulness`` on a text classifier: its typed
sentences questioned over their words, scores and report written (an untrained model: the test
checks that the tests run and are reported, not what they find)."""

from __future__ import annotations

import json

import pytest
from test_sentences import _checkpoint

from attnkit.api import TextModel
from attnkit.cli import main

LIGHT = ["--permutations", "4", "--adversarial-steps", "3", "--ig-steps", "4"]


@pytest.mark.parametrize("attention", ["additive", "none"])
def test_the_api_questions_typed_sentences(tmp_path, attention):
    model = TextModel.load(_checkpoint(tmp_path / "run" / "best", attention), "cpu")
    scores = model.faithfulness(
        ["a gripping film", "dull plot ."],
        out=tmp_path / "faith",
        permutations=4,
        adversarial_steps=3,
        ig_steps=4,
    )
    written = json.loads((tmp_path / "faith" / "scores.json").read_text(encoding="utf-8"))
    assert written["summary"] == scores["summary"]
    assert (tmp_path / "faith" / "report.html").is_file()
    assert "gradient" in scores.table()  # every ranking method is in the printed table
    assert (scores.value is None) == (attention == "none")


def test_the_command_questions_a_text_model_and_refuses_text_with_a_split(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path / "run" / "best", "additive")
    out = tmp_path / "faith"
    assert (
        main(["faithfulness", "--model", str(ckpt), "a gripping film", "--out", str(out), *LIGHT])
        == 0
    )
    assert (out / "scores.json").is_file() and "wrote" in capsys.readouterr().out
    assert main(["faithfulness", "--model", str(ckpt), "a film", "--split", "test", *LIGHT]) == 2
    assert "not both" in capsys.readouterr().err
