import gzip
import shutil

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


@pytest.mark.parametrize("src, tgt", [("de", "de"), ("de", "fr"), ("fr", "de"), ("en", "cs")])
def test_language_pair_is_checked(tmp_path, src, tgt):
    with pytest.raises(ConfigError) as info:
        multi30k.load(tmp_path, src_lang=src, tgt_lang=tgt)
    message = str(info.value)
    assert "\n" not in message
    if "de" in (src, tgt) and "fr" in (src, tgt):
        assert "not a line-aligned pair" in message and "en<->de, en<->fr" in message


@pytest.mark.parametrize("src, tgt", [("en", "de"), ("de", "en"), ("en", "fr"), ("fr", "en")])
def test_the_aligned_pairs_pass_the_language_check(tmp_path, src, tgt):
    assert multi30k.language_problem(src, tgt) is None
    with pytest.raises(DataError, match=f"train.{src}.gz"):  # past the check: the files are missing
        multi30k.load(tmp_path, src_lang=src, tgt_lang=tgt)


def write_split_files(directory, langs, lines=(b"One.", b"Two.")):
    """Every split's file of each of ``langs`` in ``directory``, holding ``lines``."""
    for stem in multi30k.SPLIT_FILES.values():
        for lang in langs:
            write_gz(directory / f"{stem}.{lang}.gz", b"".join(line + b"\n" for line in lines))


def test_a_pair_reads_only_its_own_files(tmp_path):
    """Only de/en files: de-en loads, en-fr names the first French file it lacks."""
    write_split_files(tmp_path, ("de", "en"))
    splits = multi30k.load(tmp_path, "de", "en", verify=False)
    assert splits.sizes() == {"train": 2, "dev": 2, "test": 2}
    with pytest.raises(DataError, match="missing data file 'train.fr.gz'") as info:
        multi30k.load(tmp_path, "en", "fr", verify=False)
    assert multi30k.BASE_URL + "train.fr.gz" in str(info.value)
    assert "data.directory" in str(info.value) and "ATTNKIT_DATA_DIR" in str(info.value)
    assert set(multi30k.files_for("fr", "en")) == {
        f"{stem}.{lang}.gz"
        for stem in ("train", "val", "test_2016_flickr")
        for lang in ("en", "fr")
    }


def test_french_checksum_mismatch_names_the_file(tmp_path):
    write_split_files(tmp_path, ("en", "fr"))
    with pytest.raises(DataError, match="sha256 checksum mismatch") as info:
        multi30k.load(tmp_path, "fr", "en")  # the source's files are checked first
    assert str(tmp_path / "train.fr.gz") in str(info.value)
    assert multi30k.SHA256["train.fr.gz"] in str(info.value)


@pytest.mark.parametrize(
    "lines, line, what",
    [
        ((b"Un.", b"  ", b"Trois."), 2, "empty line"),
        ((b"Un.", b"Deux.", b"Tr\xe8s."), 3, "invalid utf-8"),  # latin-1, not utf-8
    ],
)
def test_french_format_errors_name_file_and_line(tmp_path, lines, line, what):
    write_split_files(tmp_path, ("en",), (b"One.", b"Two.", b"Three."))
    write_split_files(tmp_path, ("fr",), lines)
    with pytest.raises(DataError, match=what) as info:
        multi30k.load(tmp_path, "en", "fr", verify=False)
    assert f"{tmp_path / 'train.fr.gz'}:{line}:" in str(info.value)


def test_french_line_count_mismatch_names_both_files(tmp_path):
    write_split_files(tmp_path, ("en",), (b"One.", b"Two.", b"Three."))
    write_split_files(tmp_path, ("fr",), (b"Un.", b"Deux."))
    with pytest.raises(DataError, match="line count mismatch") as info:
        multi30k.load(tmp_path, "fr", "en", verify=False)
    message = str(info.value)
    assert f"{tmp_path / 'train.fr.gz'} has 2 lines" in message
    assert f"{tmp_path / 'train.en.gz'} has 3" in message


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


def test_real_multi30k_french(shared_data):
    directory = shared_data("multi30k")
    if not (directory / "train.fr.gz").is_file():
        pytest.skip(f"no French files in {directory} (train.fr.gz and the others are missing)")
    splits = multi30k.load(directory, src_lang="en", tgt_lang="fr")
    assert splits.sizes() == {"train": 29_000, "dev": 1_014, "test": 1_000}
    assert splits.train[0] == (
        "Two young, White males are outside near many bushes.",
        "Deux jeunes hommes blancs sont dehors près de buissons.",
    )
    reverse = multi30k.load(directory, src_lang="fr", tgt_lang="en", verify=False)
    assert reverse.test == [pair[::-1] for pair in splits.test]


def test_a_corrupted_copy_of_the_real_french_files_is_refused(tmp_path, shared_data):
    """The genuine files pass their checksums; one flipped byte in a French one does not."""
    directory = shared_data("multi30k")
    if not (directory / "val.fr.gz").is_file():
        pytest.skip(f"no French files in {directory} (val.fr.gz and the others are missing)")
    for name in multi30k.files_for("en", "fr"):
        shutil.copyfile(directory / name, tmp_path / name)
    assert multi30k.load(tmp_path, "en", "fr").sizes()["dev"] == 1_014
    data = bytearray((tmp_path / "val.fr.gz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "val.fr.gz").write_bytes(bytes(data))
    with pytest.raises(DataError, match="sha256 checksum mismatch") as info:
        multi30k.load(tmp_path, "en", "fr")
    assert str(tmp_path / "val.fr.gz") in str(info.value)


def test_download_fetches_only_the_pair_s_files(tmp_path, shared_data, monkeypatch):
    """``download=True`` fetches the missing en/fr files from the public home (here a file:// copy
    of it) and checks them; no German file is fetched."""
    directory = shared_data("multi30k")
    if not (directory / "train.fr.gz").is_file():
        pytest.skip(f"no French files in {directory} (train.fr.gz and the others are missing)")
    monkeypatch.setattr(multi30k, "BASE_URL", directory.as_uri() + "/")
    target = tmp_path / "fetched"
    splits = multi30k.load(target, "fr", "en", download=True)
    assert splits.sizes() == {"train": 29_000, "dev": 1_014, "test": 1_000}
    assert {p.name for p in target.iterdir()} == set(multi30k.files_for("en", "fr"))
