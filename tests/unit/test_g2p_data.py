import pytest

from attnkit.data.tasks import g2p
from attnkit.errors import DataError


def test_load_cmudict_file_parses_pairs(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"'CAUSE  K AH Z\nA  AH\nA  EY\n\nABS  AE B Z\n")
    assert g2p.load_cmudict_file(path) == [
        ("'CAUSE", "K AH Z"),
        ("A", "AH"),
        ("A", "EY"),
        ("ABS", "AE B Z"),
    ]


@pytest.mark.parametrize(
    "bad, line",
    [
        (b"CAT K AE T\n", 2),  # single space: no word/phones separator
        (b"  K AE T\n", 2),  # empty word
        (b"CAT  \n", 2),  # no phones
        (b"CA\x00T  K AE T\n", 2),  # not text
    ],
)
def test_malformed_line_reports_file_and_line(tmp_path, bad, line):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"DOG  D AO G\n" + bad)
    with pytest.raises(DataError) as info:
        g2p.load_cmudict_file(path)
    assert f"{path}:{line}:" in str(info.value)
    assert info.value.line == line


def test_missing_directory_says_how_to_get_it(tmp_path):
    with pytest.raises(DataError) as info:
        g2p.load(tmp_path)
    message = str(info.value)
    assert "train.txt" in message and "--set data.download=true" in message and "CNTK" in message


def test_references_and_unique_words_keep_file_order():
    pairs = [("ABS", "AE B Z"), ("ABS", "EY B IY EH S"), ("ACE", "EY S"), ("ABS", "AE B Z")]
    assert g2p.references(pairs) == {"ABS": ["AE B Z", "EY B IY EH S"], "ACE": ["EY S"]}
    assert g2p.unique_words(pairs) == ["ABS", "ACE"]


def test_real_cmudict_split(shared_data):
    splits = g2p.load(shared_data("cmudict"))
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (108_952, 5_447, 12_855)
    assert len(g2p.unique_words(splits.test)) == 11_994
    assert len(g2p.references(splits.test)) == 11_994
    assert len(g2p.unique_words(splits.train)) == 102_068
    assert not set(g2p.unique_words(splits.train)) & set(g2p.unique_words(splits.test))
    assert ("'CAUSE", "K AH Z") in splits.train[:5]
    phones = {p for _, target in splits.train for p in target.split()}
    assert len(phones) == 39


def test_checksum_mismatch_is_reported(tmp_path):
    for name in (g2p.TRAIN_FILE, g2p.DEV_FILE, g2p.TEST_FILE):
        (tmp_path / name).write_bytes(b"ABADI  AH B AE D IY\n")
    with pytest.raises(DataError, match="mismatch") as info:
        g2p.load(tmp_path)
    message = str(info.value)
    assert "train.txt" in message and g2p.SHA256[g2p.TRAIN_FILE] in message
    assert len(g2p.load(tmp_path, verify=False).test) == 1
