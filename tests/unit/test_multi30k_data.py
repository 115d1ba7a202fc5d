import gzip

import pytest

from attnkit.data.tasks import multi30k
from attnkit.errors import ConfigError, DataError


def write_gz(path, data: bytes):
    with gzip.open(path, "wb") as f:
        f.write(data)
    return path


def test_read_parallel_pairs_lines(tmp_path):
    de = write_gz(tmp_path / "a.de.gz", "Ein Hund läuft.\n Zwei Katzen. \n".encode())
    en = write_gz(tmp_path / "a.en.gz", b"A dog runs.\nTwo cats.\n")
    assert multi30k.read_parallel(de, en) == [
        ("Ein Hund läuft.", "A dog runs."),
        ("Zwei Katzen.", "Two cats."),
    ]


def test_count_mismatch_names_both_files(tmp_path):
    de = write_gz(tmp_path / "a.de.gz", b"Eins.\nZwei.\n")
    en = write_gz(tmp_path / "a.en.gz", b"One.\n")
    with pytest.raises(DataError, match="mismatch") as info:
        multi30k.read_parallel(de, en)
    assert str(de) in str(info.value) and str(en) in str(info.value)


@pytest.mark.parametrize("data, line", [(b"One.\n\nThree.\n", 2), (b"One.\nT\xffwo.\n", 2)])
def test_empty_or_undecodable_line(tmp_path, data, line):
    path = write_gz(tmp_path / "a.en.gz", data)
    with pytest.raises(DataError) as info:
        multi30k.read_lines(path)
    assert f"{path}:{line}:" in str(info.value)


def test_not_gzip_is_a_data_error(tmp_path):
    path = tmp_path / "a.en.gz"
    path.write_bytes(b"plain text\n")
    with pytest.raises(DataError, match="gzip"):
        multi30k.read_lines(path)


@pytest.mark.parametrize("src, tgt", [("de", "de"), ("fr", "en"), ("en", "cs")])
def test_language_pair_is_checked(tmp_path, src, tgt):
    with pytest.raises(ConfigError):
        multi30k.load(tmp_path, src_lang=src, tgt_lang=tgt)


def test_missing_files_say_how_to_get_them(tmp_path):
    with pytest.raises(DataError) as info:
        multi30k.load(tmp_path)
    assert "train.de.gz" in str(info.value) and "data.download=true" in str(info.value)
    assert "raw.githubusercontent.com/multi30k/dataset" in str(info.value)


def test_real_multi30k(shared_data):
    directory = shared_data("multi30k")
    splits = multi30k.load(directory)
    assert splits.sizes() == {"train": 29_000, "dev": 1_014, "test": 1_000}
    assert splits.train[0] == (
        "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        "Two young, White males are outside near many bushes.",
    )
    reverse = multi30k.load(directory, src_lang="en", tgt_lang="de", verify=False)
    assert reverse.test[0] == splits.test[0][::-1]
