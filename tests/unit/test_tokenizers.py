"""The text levels: ``word`` splits punctuation off (sacremoses) and puts output back together
the same way, ``whitespace`` splits on spaces alone, and checkpoints written when ``word`` was a
whitespace split keep decoding as they did."""

from __future__ import annotations

import pytest

from attnkit.data.tokenizers import (
    MosesTokenizer,
    WhitespaceTokenizer,
    tokenizer_from_json,
)
from attnkit.errors import CheckpointError
from attnkit.families.seq2seq.setup import make_tokenizer

SENTENCES = [
    "Ein Mann mit einem Hut, der die Kamera anstarrt.",
    'A "big" dog (brown) runs; it jumps!',
    "Zwei Männer: einer liest, der andere schläft?",
]


@pytest.fixture(scope="module")
def moses():
    return MosesTokenizer()


def test_word_level_splits_punctuation_off_and_detokenizes_the_same_way(moses):
    tokens = moses.tokenize(SENTENCES[0])
    assert tokens[-1] == "." and "," in tokens and "Hut" in tokens and "Hut," not in tokens
    for text in SENTENCES:
        assert moses.detokenize(moses.tokenize(text)) == text
    assert "&amp;" not in moses.tokenize("salt & pepper")  # no XML escaping


def test_whitespace_level_takes_what_spaces_separate():
    tok = WhitespaceTokenizer()
    assert tok.tokenize("AH0  B   K") == ["AH0", "B", "K"]
    assert tok.tokenize("Hut, anstarrt.") == ["Hut,", "anstarrt."]
    assert tok.detokenize(["a", "b"]) == "a b"


def test_levels_make_their_tokenizers(tmp_path):
    made = {
        lvl: make_tokenizer(lvl, True, [], tmp_path, "source", 10) for lvl in ("word", "whitespace")
    }
    assert made["word"].kind == "moses" and made["whitespace"].kind == "whitespace"
    assert made["word"].tokenize("Der HUT.") == ["der", "hut", "."]  # lowercase first


def test_a_checkpoint_records_its_tokenizer_and_old_word_ones_stay_whitespace(moses):
    again = tokenizer_from_json(moses.to_json())
    assert isinstance(again, MosesTokenizer) and again.tokenize("Hut,") == ["Hut", ","]
    old = tokenizer_from_json({"kind": "word", "lowercase": False})  # written before the split
    assert isinstance(old, WhitespaceTokenizer) and old.tokenize("Hut,") == ["Hut,"]
    assert tokenizer_from_json(WhitespaceTokenizer(True).to_json()).lowercase is True


@pytest.mark.parametrize("lang", ["../etc", "EN", 3, "english"])
def test_a_saved_moses_language_is_a_language_code(lang):
    with pytest.raises(CheckpointError, match="is not a language code"):
        tokenizer_from_json({"kind": "moses", "lang": lang})


# Unicode normalisation: "é" as one code point (NFC) and as "e" + a combining acute (NFD)
COMPOSED, DECOMPOSED = "caf\u00e9 na\u00efve", "cafe\u0301 nai\u0308ve"


@pytest.mark.parametrize("level", ["char", "word", "whitespace", "sentencepiece"])
def test_every_level_reads_composed_and_decomposed_letters_alike(level, tmp_path):
    assert COMPOSED != DECOMPOSED  # the two spellings differ as strings
    texts = [COMPOSED, "le caf\u00e9 est ouvert", "un homme na\u00eff"] * 5
    tok = make_tokenizer(level, False, texts, tmp_path, "source", 40, "NFC")
    assert tok.tokenize(DECOMPOSED) == tok.tokenize(COMPOSED)
    again = tokenizer_from_json(tok.to_json(), tmp_path)  # the checkpoint records the form
    assert again.normalize == "NFC" and again.tokenize(DECOMPOSED) == tok.tokenize(COMPOSED)
    raw = make_tokenizer(level, False, texts, tmp_path / "raw", "source", 40, None)
    assert raw.tokenize(DECOMPOSED) != raw.tokenize(COMPOSED)  # without a form they differ


def test_tokenizers_saved_before_normalisation_read_text_as_it_comes():
    old = tokenizer_from_json({"kind": "char", "lowercase": False})
    assert old.normalize is None and old.tokenize("e\u0301") == ["e", "\u0301"]


@pytest.mark.parametrize("form", ["NFX", 7, "x" * 10_000])
def test_a_saved_normal_form_must_be_one_of_unicodes(form):
    with pytest.raises(CheckpointError, match="is not a Unicode normal form") as err:
        tokenizer_from_json({"kind": "char", "normalize": form})
    assert len(str(err.value)) < 200  # a long value is not echoed
