"""``attnkit translate --model hf:DIR``: a pretrained encoder-decoder (tiny Marian and T5, saved
here, nothing downloaded) translates each TEXT, each line of a file or of standard input, one
output a line as ``attnkit.load("hf:DIR").translate`` gives it; ``--attention-out`` writes
every output's cross-attention (every layer and head); what does not apply is one line."""

from __future__ import annotations

import io

import numpy as np
import pytest

pytest.importorskip("transformers", reason="no transformers (pip install attnkit[hf])")
import attnkit  # noqa: E402
from attnkit.cli import main  # noqa: E402
from attnkit.families.hf.tiny import save_tiny  # noqa: E402
from attnkit.viz import load_records  # noqa: E402

TEXTS = ["the cat sat", "a dog barked at the cat"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-translate")
    return {kind: f"hf:{save_tiny(kind, root / kind)}" for kind in ("marian", "t5", "bert")}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["translate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", ["marian", "t5"])
def test_each_text_is_translated_as_the_python_api_translates_it(tiny, capsys, kind):
    code, out, err = run(capsys, "--model", tiny[kind], *TEXTS)
    assert code == 0, err
    expected = [t.output for t in attnkit.load(tiny[kind]).translate(TEXTS)]
    assert out.splitlines() == expected


def test_a_beam_is_the_models_beam_search(tiny, capsys):
    code, out, _ = run(capsys, "--model", tiny["marian"], "--beam", "3", TEXTS[0])
    (expected,) = attnkit.load(tiny["marian"]).translate(TEXTS[0], beam=3)
    assert code == 0 and out.splitlines() == [expected.output]


def test_lines_of_standard_input_a_blank_one_blank(tiny, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{TEXTS[0]}\n\n{TEXTS[1]}\n"))
    code, out, _ = run(capsys, "--model", tiny["marian"], "-")
    expected = [t.output for t in attnkit.load(tiny["marian"]).translate(TEXTS)]
    assert code == 0 and out.split("\n")[:3] == [expected[0], "", expected[1]]


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_attention_out_holds_every_layer_and_head_of_the_cross_attention(
    tiny, capsys, tmp_path, suffix
):
    path = tmp_path / f"att{suffix}"
    code, _, err = run(capsys, "--model", tiny["marian"], *TEXTS, "--attention-out", str(path))
    assert code == 0 and f"attention of 2 outputs written to {path}" in err
    records = load_records(path)
    results = attnkit.load(tiny["marian"]).translate(TEXTS)
    assert len(records) == len(results) == 2
    for record, result in zip(records, results):
        cross = result.parts["cross"]
        assert record.source_tokens == cross.keys.labels
        assert record.output_tokens == cross.queries.labels
        # JSON keeps 5 decimals
        np.testing.assert_allclose(record.heads, cross.heads.transpose(2, 0, 1, 3), atol=1e-5)
        np.testing.assert_allclose(record.weights, cross.heads.mean(axis=(0, 1)), atol=1e-5)
        np.testing.assert_allclose(record.weights.sum(-1), 1.0, atol=1e-4)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--n-best", "2", "--beam", "2"], "--n-best/--scores"),
        (["--scores"], "--n-best/--scores"),
        (["--alpha", "0.6"], "--alpha 0.6"),
        (["--attention-out", "a.txt"], "use a .json or .npz"),
    ],
)
def test_options_that_do_not_apply_are_one_line(tiny, capsys, argv, says):
    code, out, err = run(capsys, "--model", tiny["marian"], *argv, TEXTS[0])
    assert code == 2 and out == ""
    assert err.startswith("attnkit: error: ") and says in err and err.count("\n") == 1


def test_a_model_that_does_not_translate_says_what_draws_it(tiny, capsys):
    code, _, err = run(capsys, "--model", tiny["bert"], TEXTS[0])
    assert code == 2 and "is for encoder-decoders" in err and "attnkit plot" in err
    assert err.count("\n") == 1
