import gzip
import os
import random

import pytest

from attnkit.data.subword import SentencePieceTokenizer
from attnkit.data.tokenizers import tokenizer_from_json
from attnkit.errors import CheckpointError, DataError


def corpus() -> list[str]:
    """~200 Multi30k German lines, or synthetic sentences when the data is absent."""
    root = os.environ.get("ATTNKIT_DATA_DIR")
    base = (
        os.path.join(root, "multi30k")
        if root
        else os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "multi30k")
    )
    path = os.path.join(base, "train.de.gz")
    if os.path.isfile(path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return [" ".join(next(f).split()) for _ in range(200)]
    rng = random.Random(0)
    words = (
        "ein zwei Hund Katze läuft springt über den großen kleinen Ball im Park Mann Frau spielt"
    ).split()
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))).capitalize() + "."
        for _ in range(200)
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    directory = tmp_path_factory.mktemp("spm")
    texts = corpus()
    return (
        SentencePieceTokenizer.train(iter(texts), directory, "de", vocab_size=500),
        texts,
        directory,
    )


def test_train_writes_only_the_model_file(trained):
    tok, _, directory = trained
    assert sorted(os.listdir(directory)) == ["de.model"]
    assert tok.to_json() == {"kind": "sentencepiece", "model_file": "de.model", "normalize": None}


def test_round_trip_is_exact(trained):
    tok, texts, _ = trained
    for text in texts + ["Ein völlig neuer Satz mit Zebras, Ümläuten & Ziffern 42!"]:
        pieces = tok.tokenize(text)
        assert pieces and all(isinstance(p, str) for p in pieces)
        assert tok.detokenize(pieces) == text
    assert len(tok.tokenize(texts[0])) < len(texts[0])  # real subwords, not characters


def test_unknown_token_survives_detokenize(trained):
    tok, _, _ = trained
    assert tok.detokenize(["\u2581Ein", "<unk>", "\u2581Hund"]) == "Ein<unk> Hund"


def test_training_is_deterministic(trained, tmp_path):
    tok, texts, directory = trained
    SentencePieceTokenizer.train(texts, tmp_path, "de", vocab_size=500)
    assert (tmp_path / "de.model").read_bytes() == (directory / "de.model").read_bytes()


def test_reload_from_json_in_another_directory(trained, tmp_path):
    tok, texts, _ = trained
    tok.copy_to(tmp_path)
    again = tokenizer_from_json(tok.to_json(), tmp_path)
    assert isinstance(again, SentencePieceTokenizer)
    assert again.model_file == tmp_path / "de.model"
    assert again.pieces() == tok.pieces()
    for text in texts[:20]:
        assert again.tokenize(text) == tok.tokenize(text)


def test_from_json_missing_or_corrupt_model(trained, tmp_path):
    tok, _, _ = trained
    with pytest.raises(CheckpointError, match="de.model"):
        SentencePieceTokenizer.from_json(tok.to_json(), tmp_path)
    (tmp_path / "de.model").write_bytes(b"not a model")
    with pytest.raises(CheckpointError, match="de.model"):
        SentencePieceTokenizer.from_json(tok.to_json(), tmp_path)
    with pytest.raises(CheckpointError):
        SentencePieceTokenizer.from_json(
            {"kind": "sentencepiece", "model_file": "../x.model"}, tmp_path
        )


def test_train_on_nothing_is_a_data_error(tmp_path):
    with pytest.raises(DataError):
        SentencePieceTokenizer.train(["", "  "], tmp_path, "empty")
