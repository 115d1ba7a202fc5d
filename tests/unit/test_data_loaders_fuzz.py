"""Every reader of user files, fed random bytes: it succeeds or raises an AttnkitError subclass.

Any other exception (UnicodeDecodeError, KeyError, TypeError, struct.error, ...) would reach the
user as a traceback instead of the CLI's one line. Drawn with hypothesis (bounded, derandomized).
"""

import gzip
import json
import struct
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit import checkpoint as ckpt
from attnkit.config import read_yaml
from attnkit.data import mnist
from attnkit.data.subword import SentencePieceTokenizer
from attnkit.data.tasks import g2p, multi30k, parallel
from attnkit.data.tokenizers import tokenizer_from_json
from attnkit.data.vocab import Vocab
from attnkit.errors import AttnkitError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.vision.config import parse_config

FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: bytes that look like text now and then: tabs, newlines, UTF-8 and invalid sequences mixed
TEXTISH = st.lists(
    st.sampled_from(
        [
            b"a",
            b"b ",
            b"\t",
            b"\n",
            b"\r\n",
            b"  ",
            b"\xc3\xa9",
            b"\xff",
            b"\xef\xbb\xbf",
            b"\x00",
            b"<",
            b"1",
        ]
    ),
    max_size=40,
).map(b"".join)
RANDOM_BYTES = st.one_of(st.binary(max_size=200), TEXTISH)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
#: YAML mappings with keys of any scalar type and values of any shape: configs a user could write
YAML_KEYS = st.one_of(
    st.sampled_from(
        [
            "name",
            "data",
            "model",
            "train",
            "decode",
            "family",
            "task",
            "output_dir",
            "lr",
            "attention",
        ]
    ),
    st.text(max_size=6),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.floats(),
)
YAML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**4) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(YAML_KEYS, inner, max_size=4),
    max_leaves=10,
)
CONFIGS = st.dictionaries(YAML_KEYS, YAML_VALUES, max_size=5)


def _only_attnkit_errors(fn, *args) -> None:
    """Run ``fn(*args)``: returning or an AttnkitError is fine, anything else fails the test."""
    try:
        fn(*args)
    except AttnkitError as exc:
        assert "\n" not in str(exc).strip(), f"a multi-line message: {exc}"


_DIR = Path(tempfile.mkdtemp(prefix="attnkit-fuzz-"))  # one scratch directory, files overwritten


def _write(data: bytes, name: str = "data.txt") -> Path:
    path = _DIR / name
    path.write_bytes(data)
    return path


@FUZZ
@given(RANDOM_BYTES)
def test_parallel_tsv_reader(data):
    _only_attnkit_errors(parallel.load_tsv, _write(data, "pairs.tsv"))


@FUZZ
@given(RANDOM_BYTES, RANDOM_BYTES)
def test_parallel_two_file_reader(src, tgt):
    _only_attnkit_errors(parallel.load_pairs, [_write(src, "src.txt"), _write(tgt, "tgt.txt")])


@FUZZ
@given(RANDOM_BYTES)
def test_cmudict_reader(data):
    _only_attnkit_errors(g2p.load_cmudict_file, _write(data, "train.txt"))


@FUZZ
@given(RANDOM_BYTES, st.booleans())
def test_multi30k_reader(data, compress):
    """Random bytes as the .gz file itself, or gzip-compressed random text."""
    _only_attnkit_errors(
        multi30k.read_lines, _write(gzip.compress(data) if compress else data, "x.de.gz")
    )


@FUZZ
@given(RANDOM_BYTES, st.booleans(), st.booleans())
def test_mnist_idx_reader(payload, images, with_magic):
    """IDX bytes: random, or a right magic number with random sizes and payload; .gz or not."""
    magic = mnist._IMAGE_MAGIC if images else mnist._LABEL_MAGIC
    data = struct.pack(">I", magic) + payload if with_magic else payload
    path = _write(data, "t10k-images-idx3-ubyte")
    _only_attnkit_errors(lambda: mnist.parse_idx(mnist._read_bytes(path), path, images))
    gz = _write(data, "t10k-images-idx3-ubyte.gz")  # not gzip at all
    _only_attnkit_errors(mnist._read_bytes, gz)


@FUZZ
@given(
    st.one_of(
        RANDOM_BYTES,
        JSON_VALUES.map(lambda v: json.dumps({"tokens": v}).encode()),
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    )
)
def test_vocabulary_file(data):
    _only_attnkit_errors(Vocab.load, _write(data, "src_vocab.json"))


@FUZZ
@given(JSON_VALUES, st.sampled_from(["char", "word", "whitespace", "moses", "sentencepiece", None]))
def test_tokenizer_entry(entry, kind):
    """tokenizers.json entries: any JSON value, or a dict of a known kind with random fields."""
    directory = _write(b"not a model", "x.model").parent
    _only_attnkit_errors(tokenizer_from_json, entry, directory)
    if isinstance(entry, dict) and kind is not None:
        _only_attnkit_errors(tokenizer_from_json, {**entry, "kind": kind}, directory)


@FUZZ
@given(RANDOM_BYTES)
def test_sentencepiece_model_file(data):
    _only_attnkit_errors(SentencePieceTokenizer, _write(data, "source.model"))


@FUZZ
@given(st.one_of(RANDOM_BYTES, CONFIGS.map(lambda c: yaml.safe_dump(c).encode())))
def test_yaml_config_loader(data):
    """Random bytes, or random YAML mappings, through the loader and the experiment config."""
    path = _write(data, "exp.yaml")
    _only_attnkit_errors(lambda: experiment_from_dict(read_yaml(path), source=str(path)))


@FUZZ
@given(CONFIGS)
def test_vision_config_parser(config):
    _only_attnkit_errors(parse_config, {**config, "family": "vision"}, "fuzz.yaml")


@FUZZ
@given(
    st.one_of(RANDOM_BYTES, JSON_VALUES.map(lambda v: json.dumps(v).encode())),
    st.sampled_from(["meta.json", "trainer.json", "config.yaml", "model.safetensors"]),
)
def test_checkpoint_files(data, name):
    """One file of a checkpoint directory replaced by random bytes (or random JSON)."""
    path = _write(data, name)
    readers = {
        "meta.json": lambda: ckpt.read_meta(path.parent),
        "trainer.json": lambda: ckpt.read_json(path),
        "config.yaml": lambda: ckpt.read_config(path.parent),
        "model.safetensors": lambda: ckpt.read_tensors(path),
    }
    _only_attnkit_errors(readers[name])


@FUZZ
@given(JSON_VALUES, st.binary(max_size=64))
def test_safetensors_with_a_random_header(header, body):
    """A well-framed safetensors file (8-byte length, JSON header) with random header and body."""
    text = json.dumps(header).encode()
    _only_attnkit_errors(
        ckpt.read_tensors, _write(struct.pack("<Q", len(text)) + text + body, "m.safetensors")
    )
