"""benchmarks/speech_length.py's buckets: numbers of exactly each digit count in held-out
voices, the words training never heard counted, and one row per bucket with each model's
scores (AER for the models that attend)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from repo_scripts import load_script

pytest.importorskip("espeakng_loader")

from attnkit.data.tasks import speech  # noqa: E402
from attnkit.data.tasks.speech_set import SpeechData  # noqa: E402
from attnkit.families.speech.bundle import build_model  # noqa: E402
from attnkit.families.speech.config import parse_config  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/speech_length.py")


def test_each_bucket_holds_numbers_of_its_digit_count_in_held_out_voices(bench):
    cfg = SpeechData(languages=["en", "de"])
    for digits in (1, 3, 6):
        items = bench.items_of(cfg, digits, per=4, seed=7)
        assert [item.voice.language for item in items] == ["en"] * 4 + ["de"] * 4
        assert all(len(item.digits) == digits for item in items)
        assert all(item.voice.variant in speech.VARIANTS["test"] for item in items)
    assert bench.items_of(cfg, 5, 4, 7) == bench.items_of(cfg, 5, 4, 7)


def test_a_word_training_never_heard_is_found(bench):
    de = SpeechData(languages=["de"], max_number=999)
    spoken = speech.Item("viertausendeins", "4001", speech.Voice("de", "m7", 175, 50, 0.0, 0))
    assert bench.words_of(spoken) == {("de", "vier"), ("de", "tausend"), ("de", "eins")}
    assert ("de", "tausend") not in bench.training_words(de)
    assert bench.words_of(spoken) <= bench.training_words(SpeechData(["de"], max_number=9999))


def test_a_row_scores_every_model_and_the_attention_of_those_that_attend(bench, tmp_path):
    data_cfg = SpeechData(languages=["en"], max_number=99, directory=str(tmp_path), n_mels=16)
    sizes = {"listener_hidden": 8, "speller_hidden": 16, "attention_dim": 8, "embedding": 8}
    models = {}
    for kind in ("las", "ctc"):
        experiment = parse_config({"family": "speech", "model": {"kind": kind, **sizes}})
        experiment.data = data_cfg
        torch.manual_seed(0)
        models[kind] = SimpleNamespace(net=build_model(experiment).eval(), config=experiment)
    data = bench.heard(data_cfg, bench.items_of(data_cfg, 3, per=2, seed=7))
    row = bench.row_of(3, data, models, data_cfg, bench.training_words(data_cfg))
    assert row["items"] == 2 and row["unheard"] == 2  # hundreds: training stopped at 99
    assert row["in_training"] is False and row["seconds"] > 0.3
    assert set(row["las"]) == {"exact_match", "cer", "wer", "spelled_digits", "aer"}
    assert set(row["ctc"]) == {"exact_match", "cer", "wer", "spelled_digits"}
    assert sum(row["ctc"]["spelled_digits"].values()) == 2
    assert 0 <= row["las"]["aer"] <= 100 and 0 <= row["ctc"]["cer"] <= 100


def test_the_picture_is_drawn(bench, tmp_path):
    curve = [{"digits": d, "a": {"exact_match": 90.0 - d, "cer": float(d)}} for d in (1, 2, 3)]
    bench.plot(curve, ["a"], 2, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 1000
