"""Encoding pairs to ids and batching them into padded tensors."""

import random
import warnings

import pytest
import torch

from attnkit.data.batching import Batch, Example, collate, encode_pairs, make_batches
from attnkit.data.tokenizers import CharTokenizer, WhitespaceTokenizer
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab
from attnkit.errors import DataError

CHAR = CharTokenizer()


def _vocabs(pairs):
    src = Vocab.build(CHAR.tokenize(s) for s, _ in pairs)
    tgt = Vocab.build(CHAR.tokenize(t) for _, t in pairs)
    return src, tgt


def _encode(pairs, **kw):
    src_vocab, tgt_vocab = _vocabs(pairs)
    return encode_pairs(pairs, CHAR, CHAR, src_vocab, tgt_vocab, **kw)


def _random_examples(n, seed=0, max_len=30):
    rng = random.Random(seed)
    return [
        Example(
            src=[rng.randint(4, 20) for _ in range(rng.randint(0, max_len))] + [EOS_ID],
            tgt=[rng.randint(4, 20) for _ in range(rng.randint(1, max_len))],
            index=i,
        )
        for i in range(n)
    ]


def test_encode_appends_eos_to_source_only():
    pairs = [("abc", "xy")]
    src_vocab, tgt_vocab = _vocabs(pairs)
    (ex,) = encode_pairs(pairs, CHAR, CHAR, src_vocab, tgt_vocab)
    assert ex.src == src_vocab.encode(list("abc")) + [EOS_ID]
    assert ex.tgt == tgt_vocab.encode(list("xy")) and EOS_ID not in ex.tgt and BOS_ID not in ex.tgt
    assert ex.index == 0


def test_unknown_characters_become_unk():
    src_vocab, tgt_vocab = _vocabs([("ab", "x")])
    (ex,) = encode_pairs([("aZb", "xQ")], CHAR, CHAR, src_vocab, tgt_vocab)
    assert ex.src[1] == UNK_ID and ex.tgt[1] == UNK_ID
    assert ex.src[0] != UNK_ID and ex.src[-1] == EOS_ID


def test_collate_pads_and_places_bos_eos():
    examples = [
        Example(src=[5, 6, EOS_ID], tgt=[7], index=0),
        Example(src=[5, 6, 8, 9, EOS_ID], tgt=[7, 8, 9], index=1),
    ]
    batch = collate(examples)
    assert batch.src.shape == (2, 5) and batch.tgt_in.shape == batch.tgt_out.shape == (2, 4)
    assert batch.src.dtype == batch.src_lengths.dtype == batch.tgt_in.dtype == torch.long
    # rows sorted longest target first; indices tell which example each row is
    assert batch.indices == [1, 0]
    shorter_target_longer_source = collate(
        [
            Example(src=[5, 6, 8, EOS_ID], tgt=[7], index=0),
            Example(src=[5, EOS_ID], tgt=[7, 8], index=1),
        ]
    )
    assert shorter_target_longer_source.indices == [
        1,
        0,
    ] and shorter_target_longer_source.src.shape == (2, 4)
    assert batch.src_lengths.tolist() == [5, 3]
    assert batch.src.tolist() == [[5, 6, 8, 9, EOS_ID], [5, 6, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 7, 8, 9], [BOS_ID, 7, PAD_ID, PAD_ID]]
    assert batch.tgt_out.tolist() == [[7, 8, 9, EOS_ID], [7, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.num_target_tokens == 6 == int((batch.tgt_out != PAD_ID).sum())
    assert len(batch) == 2
    moved = batch.to("cpu")
    assert (
        isinstance(moved, Batch)
        and torch.equal(moved.src, batch.src)
        and moved.indices == batch.indices
    )


def test_src_lengths_match_padding_in_every_batch():
    for batch in make_batches(_random_examples(200), batch_size=16, shuffle=True):
        for row, length in zip(batch.src, batch.src_lengths.tolist()):
            assert (
                row[length - 1] == EOS_ID
                and (row[length:] == PAD_ID).all()
                and (row[:length] != PAD_ID).all()
            )
        tgt_lengths = (batch.tgt_out != PAD_ID).sum(1)
        assert (batch.tgt_out.gather(1, (tgt_lengths - 1)[:, None]) == EOS_ID).all()
        assert (batch.tgt_in[:, 0] == BOS_ID).all()


@pytest.mark.parametrize("kw", [{"batch_size": 7}, {"max_tokens": 120}])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("bucket", [False, True])
def test_every_example_lands_in_exactly_one_batch(kw, shuffle, bucket):
    examples = _random_examples(500)
    batches = make_batches(examples, shuffle=shuffle, bucket=bucket, **kw)
    seen = [i for b in batches for i in b.indices]
    assert sorted(seen) == list(range(500))
    if "batch_size" in kw:
        assert all(len(b) <= 7 for b in batches)


def test_max_tokens_bounds_padded_positions():
    examples = _random_examples(500, max_len=40)
    batches = make_batches(examples, max_tokens=200, shuffle=True, seed=3)
    for b in batches:
        assert len(b) * max(b.src.size(1), b.tgt_out.size(1)) <= 200
    assert sum(len(b) for b in batches) == 500


def test_max_tokens_gives_an_overlong_example_its_own_batch():
    examples = [Example(src=[5] * 50 + [EOS_ID], tgt=[5], index=0)] + _random_examples(
        20, max_len=5
    )[1:]
    batches = make_batches(examples, max_tokens=30)
    (big,) = [b for b in batches if 0 in b.indices]
    assert len(big) == 1


def test_bucketing_reduces_padding():
    examples = _random_examples(1000, max_len=60)

    def waste(batches):  # padded positions that hold no token, with cost max(S, T) per example
        used = sum(e.cost for e in examples)
        return sum(len(b) * max(b.src.size(1), b.tgt_out.size(1)) for b in batches) / used - 1

    bucketed = waste(make_batches(examples, batch_size=20, bucket=True, shuffle=True))
    assert (
        bucketed < 0.05 < waste(make_batches(examples, batch_size=20, bucket=False, shuffle=True))
    )


def test_shuffle_is_deterministic_from_seed():
    examples = _random_examples(300)
    order = lambda **kw: [b.indices for b in make_batches(examples, batch_size=10, **kw)]  # noqa: E731
    assert order(shuffle=True, seed=1) == order(shuffle=True, seed=1)
    assert order(shuffle=True, seed=1) != order(shuffle=True, seed=2)
    assert order() == order()


def test_exactly_one_of_batch_size_and_max_tokens():
    with pytest.raises(ValueError, match="exactly one"):
        make_batches(_random_examples(5))
    with pytest.raises(ValueError, match="exactly one"):
        make_batches(_random_examples(5), batch_size=2, max_tokens=10)


PAIRS = [("abcdef", "xyz"), ("ab", "x"), ("abcdefgh", "xyzxyzxyz")]


def test_truncate_warns_once_and_keeps_eos():
    with pytest.warns(UserWarning, match="truncated 2 of 3") as record:
        examples = _encode(PAIRS, max_src_len=5, max_tgt_len=4, source_name="train.tsv")
    assert len(record) == 1 and "train.tsv" in str(record[0].message)
    assert [len(e.src) for e in examples] == [5, 3, 5]
    assert all(e.src[-1] == EOS_ID for e in examples)
    assert [len(e.tgt) for e in examples] == [3, 1, 4]


def test_no_warning_when_nothing_is_too_long():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _encode(PAIRS, max_src_len=9, max_tgt_len=9)


def test_overlong_error_names_source_and_example():
    with pytest.raises(DataError, match=r"dev\.tsv.*example 3"):
        _encode(PAIRS, max_src_len=8, overlong="error", source_name="dev.tsv")


def test_overlong_skip_drops_and_warns_once():
    with pytest.warns(UserWarning, match="skipped 1 of 3") as record:
        examples = _encode(PAIRS, max_tgt_len=5, overlong="skip")
    assert len(record) == 1
    assert [e.index for e in examples] == [0, 1]


def test_empty_side_after_tokenization_is_an_error():
    src_vocab = Vocab.build([["a"]])
    with pytest.raises(DataError, match=r"test\.tsv.*example 2.*empty target"):
        encode_pairs(
            [("a", "a"), ("a", "   ")],
            CHAR,
            WhitespaceTokenizer(),
            src_vocab,
            src_vocab,
            source_name="test.tsv",
        )


def test_bad_overlong_mode():
    with pytest.raises(ValueError, match="truncate"):
        _encode(PAIRS, overlong="cut")
