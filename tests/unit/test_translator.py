"""Translator: text in, text and attention out; bad inputs are clear errors, odd inputs never
crash."""

import copy

import numpy as np
import pytest
import torch

from attnkit.data.text_input import read_inputs
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import EOS, EOS_ID, UNK_ID, Vocab
from attnkit.errors import AttnkitError, InputError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translation, Translator
from attnkit.models.seq2seq import Seq2Seq
from attnkit.viz.records import AttentionRecord

PAIRS = [
    ("abc", "cba"),
    ("hello", "olleh"),
    ("ab", "ba"),
    ("cab", "bac"),
    ("lo", "ol"),
    ("he", "eh"),
]


def _translator(**data) -> Translator:
    cfg = experiment_from_dict(
        {
            "data": data,
            "model": {
                "attention": "luong-general",
                "embedding_dim": 8,
                "encoder_hidden": 8,
                "decoder_hidden": 16,
                "attention_dim": 8,
                "dropout": 0.0,
            },
            "decode": {"max_len_cap": 10, "batch_size": 2},
        }
    )
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in PAIRS)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in PAIRS)
    torch.manual_seed(0)
    model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab)).eval()
    with torch.no_grad():  # a random model that ends some outputs early, as a trained one would
        model.decoder.output.bias[EOS_ID] += 2.0
    return Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu"))


@pytest.fixture(scope="module")
def translator():
    return _translator()


def _check_shapes(t: Translation):
    assert t.weights.shape == (len(t.output_tokens), len(t.source_tokens))
    assert t.source_tokens[-1] == EOS
    np.testing.assert_allclose(t.weights.sum(-1), 1.0, rtol=1e-5)
    rec = t.record("ref")
    assert isinstance(rec, AttentionRecord)
    assert rec.weights.shape == (len(rec.output_tokens), len(rec.source_tokens))


@pytest.mark.parametrize("texts", [[""], ["abc", ""], ["   ", "abc", "\t"], ["\t"]])
def test_a_blank_input_gives_a_blank_output_and_a_warning(translator, texts):
    with pytest.warns(UserWarning, match=r"blank input\(s\) \(line ") as caught:
        results = translator.translate(texts, beam_size=2, n_best=2)
    blank = [i for i, t in enumerate(texts) if not t.strip()]
    assert str(len(blank)) in str(caught[0].message)
    assert len(results) == len(texts)
    for i, (text, t) in enumerate(zip(texts, results)):
        assert t.source == text
        if i in blank:
            assert t.output == "" and t.weights.shape == (0, 0) and t.nbest == [t]
        else:
            assert t.weights.shape[1] == len(t.source_tokens) == len(text) + 1
            alone = translator.translate([text], beam_size=2, n_best=2)[0]
            assert [o.output for o in t.nbest] == [o.output for o in alone.nbest]


def test_an_empty_input_is_an_error_where_an_output_is_forced(translator):
    with pytest.raises(AttnkitError, match="input 2 is empty"):
        translator.teacher_forced(["abc", " "], ["cba", "x"])


def test_unseen_characters_are_named_once_per_input(translator):
    with pytest.warns(UserWarning) as caught:
        translator.translate(["xé€!x", "abc", "", "€"])
    messages = [str(w.message) for w in caught]
    assert messages == [
        "1 blank input(s) (line 3) give blank outputs",
        "input 1: never seen in training, read as <unk>: 'x', 'é', '€', '!'",
        "input 4: never seen in training, read as <unk>: '€'",  # numbered as given
    ]


def test_no_inputs_is_an_error(translator):
    with pytest.raises(AttnkitError, match="no input"):
        translator.translate([])


def test_unseen_characters_map_to_unk(translator):
    examples, tokens = translator.encode_sources(["xé€!", "abc"])
    assert examples[0].src == [UNK_ID] * 4 + [EOS_ID]
    assert tokens[0] == ["x", "é", "€", "!", EOS]
    assert UNK_ID not in examples[1].src
    (t,) = translator.translate(["zzz 😀 中文"])
    assert t.source_tokens == list("zzz 😀 中文") + [EOS]
    _check_shapes(t)
    (t,) = translator.translate(["qq"], beam_size=3)
    _check_shapes(t)


def test_overlong_input_truncated_with_warning():
    tr = _translator(max_src_len=4)  # 3 tokens + </s>
    with pytest.warns(UserWarning, match="truncated"):
        out = tr.translate(["hello", "ab"])
    assert out[0].source_tokens == ["h", "e", "l", EOS]
    assert out[0].source == "hello"
    assert out[0].weights.shape[1] == 4
    assert out[1].source_tokens == ["a", "b", EOS]
    for t in out:
        _check_shapes(t)


def test_input_at_the_limit_is_not_truncated(recwarn):
    tr = _translator(max_src_len=4)
    (t,) = tr.translate(["abc"])
    assert t.source_tokens == ["a", "b", "c", EOS]
    assert not [w for w in recwarn if "truncated" in str(w.message)]


def test_overlong_input_refused_when_overlong_is_error():
    tr = _translator(max_src_len=4, overlong="error")
    with pytest.raises(AttnkitError) as err:
        tr.translate(["ab", "hello"])
    msg = str(err.value)
    assert "input 2" in msg and "max_src_len" in msg


@pytest.mark.parametrize("n_best", [1, 2, 4])
def test_n_best_returns_that_many_alternatives(translator, n_best):
    texts = ["abc", "hello", "l"]
    out = translator.translate(texts, beam_size=4, n_best=n_best)
    assert [t.source for t in out] == texts
    for t in out:
        assert len(t.nbest) == n_best
        assert t.nbest[0] is t
        assert len({(n.output, tuple(n.output_tokens)) for n in t.nbest}) == n_best
        for n in t.nbest:
            _check_shapes(n)


def test_attention_records_shape_for_greedy_and_beam(translator):
    texts = ["abc", "hello", "b", "cab", "lo"]
    for beam in (1, 3):
        for t in translator.translate(texts, beam_size=beam):
            _check_shapes(t)
            if t.output_tokens and t.output_tokens[-1] == EOS:
                assert t.output == "".join(t.output_tokens[:-1])
            else:  # cut at max_len: no </s> row
                assert t.output == "".join(t.output_tokens)


def test_results_are_in_input_order_whatever_the_batching(translator):
    texts = ["hello", "a", "cab", "lo", "abcabc", "b"]
    batched = translator.translate(texts, batch_size=4)
    single = [translator.translate([x])[0] for x in texts]
    assert [t.source for t in batched] == texts
    for a, b in zip(batched, single):
        assert a.output == b.output
        np.testing.assert_allclose(a.weights, b.weights, atol=1e-5)
        assert a.score == pytest.approx(b.score, abs=1e-4)


def test_an_unfinished_output_does_not_depend_on_what_it_was_batched_with():
    tr = _translator()
    with torch.no_grad():
        tr.model.decoder.output.bias[EOS_ID] = -1e4  # never ends: every output hits its limit
    tr.config = copy.deepcopy(tr.config)
    tr.config.decode.max_len_ratio, tr.config.decode.max_len_extra = 1.0, 0  # limit: source length
    tr.config.decode.max_len_cap = 100
    texts = ["a", "abcabcab", "ab"]
    batched = tr.translate(texts, batch_size=3)
    for text, t in zip(texts, batched):
        (alone,) = tr.translate([text])
        assert t.output_tokens == alone.output_tokens
        assert EOS not in t.output_tokens
    assert len(batched[0].output_tokens) < len(batched[1].output_tokens)


def test_unfinished_output_has_no_eos_row():
    tr = _translator()
    with torch.no_grad():
        tr.model.decoder.output.bias[EOS_ID] = -1e4
    tr.config = copy.deepcopy(tr.config)
    tr.config.decode.max_len_cap = 3
    (t,) = tr.translate(["abc"])
    assert len(t.output_tokens) == 3 and EOS not in t.output_tokens
    _check_shapes(t)


def test_read_inputs_strips_line_ends():
    assert read_inputs(["a\n", "b\r\n", "c"]) == ["a", "b", "c"]


def test_read_inputs_replaces_bytes_that_are_not_utf8_and_names_the_lines():
    lines = [b"ok\n", b"b\xffd\n", "\u00e9t\u00e9\n".encode(), b"\xc3\n", "x\udcfey\n"]
    warning = r"^lines 2, 4, 5: bytes that are not UTF-8 were replaced by U\+FFFD$"
    with pytest.warns(UserWarning, match=warning):
        texts = read_inputs(lines)
    assert texts == ["ok", "b\ufffdd", "\u00e9t\u00e9", "\ufffd", "x\ufffdy"]
    for text in texts:
        text.encode("utf-8")  # strict: no surrogates left


def test_translate_replaces_lone_surrogates_in_its_inputs():
    translator = _translator()
    bad = b"a\xffb".decode("utf-8", "surrogateescape")  # how Python reads such bytes from argv
    with pytest.warns(UserWarning, match="inputs 2, 3: bytes that are not UTF-8"):
        results = translator.translate(["ab", bad, "\ud800"])
    assert [r.source for r in results[:2]] == ["ab", "a\ufffdb"]
    for r in results:
        r.record().to_json()
        (r.source + "".join(r.source_tokens)).encode("utf-8")


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), -0.5])
def test_the_api_object_refuses_a_bad_length_penalty(alpha):
    from attnkit.api import Seq2SeqModel

    with pytest.raises(InputError, match="alpha, the length penalty") as err:
        Seq2SeqModel(_translator()).translate(["ab"], beam=2, alpha=alpha)
    assert err.value.name == "alpha"


def test_a_huge_input_is_cut_before_it_is_tokenized(monkeypatch):
    """A line far above data.max_src_len is cut to max_src_len x CHARS_PER_TOKEN characters
    before the tokenizer sees it (a gigabyte line costs no tokenizing time)."""
    from attnkit.data.text_input import CHARS_PER_TOKEN

    tr = _translator(max_src_len=4)
    seen = []
    real = tr.src_tokenizer.tokenize
    monkeypatch.setattr(
        tr.src_tokenizer, "tokenize", lambda text: seen.append(len(text)) or real(text)
    )
    with pytest.warns(UserWarning, match="truncated"):
        (t,) = tr.translate(["abc" * 1_000_000])
    assert seen == [4 * CHARS_PER_TOKEN] and t.source_tokens == ["a", "b", "c", EOS]
    strict = _translator(max_src_len=4, overlong="error")
    with pytest.raises(AttnkitError, match="input 1 has 3,000,000 characters"):
        strict.translate(["abc" * 1_000_000])


def test_read_inputs_drops_a_byte_order_mark():
    assert read_inputs([b"\xef\xbb\xbfabc\n", b"\xef\xbb\xbfd\n"]) == ["abc", "\ufeffd"]
