"""The input a page opens with: one the model reads and that shows what it does, or None for a
task of files."""

from __future__ import annotations

from attnkit.data.tasks import dates, numbers
from attnkit.data.tasks.registry import data_from_dict
from attnkit.data.tasks.sample_input import sample_input


def _data(**fields):
    return data_from_dict(fields, "data")


def test_a_german_number_model_opens_on_siebenundneunzig():
    assert sample_input(_data(task="numbers", languages=["en", "de"])) == "siebenundneunzig"
    assert sample_input(_data(task="numbers", languages=["fr"])) == "quatre-vingt-dix-sept"


def test_the_number_is_one_the_model_knows_in_the_direction_it_reads():
    small = _data(task="numbers", languages=["de"], max_number=20)
    assert sample_input(small) == "zwanzig"
    reverse = _data(task="numbers", languages=["es"], direction="digits2words")
    assert sample_input(reverse) == "es: 97"
    sources = {src for src, _ in numbers.make_pairs(["es"], "digits2words", 999)}
    assert sample_input(reverse) in sources


def test_a_date_model_opens_on_a_written_date_and_a_file_task_on_nothing():
    written = sample_input(_data(task="dates"))
    assert written == dates.sample(seed=0, n=1)[0].source and written.strip()
    assert sample_input(_data(task="g2p")) is None


def test_a_multi30k_translator_opens_on_an_unseen_caption_in_its_source_language(shared_data):
    import gzip

    captions = {
        lang: sample_input(_data(task="multi30k", src_lang=lang, tgt_lang=other))
        for lang, other in (("de", "en"), ("en", "fr"), ("fr", "en"))
    }
    assert len(set(captions.values())) == 3 and all(c.endswith(".") for c in captions.values())
    folder = shared_data("multi30k")  # skips, saying so, without $ATTNKIT_DATA_DIR/multi30k
    for lang, caption in captions.items():
        for path in folder.glob(f"*.{lang}.gz"):
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                assert caption.rstrip(".") not in lines.read(), f"{caption!r} is in {path.name}"
