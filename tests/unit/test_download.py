import gzip
import hashlib

import pytest

from attnkit.data.download import (
    download_file,
    ensure_files,
    md5_of_content,
    sha256_file,
    verify_file,
)
from attnkit.errors import DataError


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample.txt"
    path.write_bytes(b"hello attention\n")
    return path


def test_sha256_matches_hashlib(sample):
    assert sha256_file(sample) == hashlib.sha256(b"hello attention\n").hexdigest()


def test_md5_of_content_gunzips_gz_files(tmp_path):
    content = b"\x00\x01idx bytes" * 100
    plain, packed = tmp_path / "data", tmp_path / "data.gz"
    plain.write_bytes(content)
    with gzip.open(packed, "wb", compresslevel=1) as f:
        f.write(content)
    expected = hashlib.md5(content).hexdigest()
    assert md5_of_content(plain) == expected
    assert md5_of_content(packed) == expected
    verify_file(packed, expected, algorithm="md5-content")


def test_verify_mismatch_names_file_and_both_hashes(sample):
    actual = sha256_file(sample)
    wrong = "0" * 64
    with pytest.raises(DataError) as info:
        verify_file(sample, wrong)
    message = str(info.value)
    assert str(sample) in message and wrong in message and actual in message
    assert info.value.path == sample


def test_verify_unknown_algorithm(sample):
    with pytest.raises(ValueError, match="algorithm"):
        verify_file(sample, "x", algorithm="crc32")


def test_ensure_files_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(DataError) as info:
        ensure_files(tmp_path, {"train.txt": "0" * 64}, base_url="https://example.org/data/")
    message = str(info.value)
    assert "train.txt" in message
    assert "--set data.download=true" in message and "https://example.org/data/train.txt" in message


def test_ensure_files_verifies_present_files(sample):
    good = sha256_file(sample)
    assert ensure_files(sample.parent, {sample.name: good}, base_url=None) == sample.parent
    with pytest.raises(DataError, match="mismatch"):
        ensure_files(sample.parent, {sample.name: "f" * 64}, base_url=None)
    ensure_files(sample.parent, {sample.name: "f" * 64}, base_url=None, verify=False)


def test_download_uses_part_file_and_verifies(tmp_path, sample):
    # a file:// URL exercises the same urllib path without a network
    dest = tmp_path / "out" / "copy.txt"
    url = sample.as_uri()
    assert download_file(url, dest, expected=sha256_file(sample)) == dest
    assert dest.read_bytes() == sample.read_bytes()
    bad = tmp_path / "out" / "bad.txt"
    with pytest.raises(DataError, match="mismatch") as info:
        download_file(url, bad, expected="0" * 64)
    assert url in str(info.value)
    assert not bad.exists() and not bad.with_name("bad.txt.part").exists()


def test_download_failure_names_url(tmp_path):
    url = (tmp_path / "nowhere.txt").as_uri()
    with pytest.raises(DataError, match="download failed") as info:
        download_file(url, tmp_path / "x.txt")
    assert url in str(info.value)


def test_ensure_files_downloads_missing_when_asked(tmp_path, sample):
    target = tmp_path / "data"
    ensure_files(
        target,
        {"sample.txt": sha256_file(sample)},
        base_url=sample.parent.as_uri() + "/",
        download=True,
    )
    assert (target / "sample.txt").read_bytes() == sample.read_bytes()


def test_a_failed_download_says_how_to_work_offline(tmp_path):
    url = (tmp_path / "nowhere.txt").as_uri()
    with pytest.raises(DataError) as info:
        download_file(url, tmp_path / "cmudict" / "x.txt")
    message = str(info.value)
    assert "$ATTNKIT_DATA_DIR holding cmudict/" in message and "data.directory" in message
    with pytest.raises(DataError) as info:
        download_file(url, tmp_path / "elsewhere" / "x.txt", folder="mnist")
    assert "holding mnist/" in str(info.value)


def test_a_missing_file_names_the_folder_of_its_own_data_set(tmp_path):
    """Cora's error asks for planetoid/, not the folders of the other data sets."""
    from attnkit.data.graph.planetoid import read_planetoid

    with pytest.raises(DataError) as info:
        read_planetoid(tmp_path / "mine", "cora", download=False)
    message = str(info.value)
    assert "$ATTNKIT_DATA_DIR holding planetoid/" in message
    assert "cmudict" not in message and "mnist" not in message
    with pytest.raises(DataError) as info:
        ensure_files(tmp_path / "sst", {"a.txt": "0" * 64}, base_url=None)
    assert "holding sst/" in str(info.value)
