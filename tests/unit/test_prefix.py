"""Decoding from a forced target prefix: the prefix starts every hypothesis, its attention rows
and log-probability are part of it, and the continuation is the model's own."""

import numpy as np
import pytest
import torch

from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import EOS, EOS_ID, Vocab
from attnkit.errors import AttnkitError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.seq2seq import Seq2Seq

SOURCES = ["abc", "hello", "cab", "lo", "hecab"]


def small_translator(attention: str = "bahdanau") -> Translator:
    """A random character model over a few letters that ends some outputs early."""
    cfg = experiment_from_dict(
        {
            "model": {
                "attention": attention,
                "embedding_dim": 8,
                "encoder_hidden": 8,
                "decoder_hidden": 16,
                "attention_dim": 8,
                "dropout": 0.0,
            },
            "decode": {"max_len_cap": 8, "batch_size": 3, "alpha": 0.6},
        }
    )
    tok = CharTokenizer()
    vocab = Vocab.build([list("abcehlo")])
    torch.manual_seed(1)
    model = Seq2Seq(cfg.model, len(vocab), len(vocab)).eval()
    with torch.no_grad():
        model.decoder.output.bias[EOS_ID] += 1.5
    return Translator(model, cfg, tok, tok, vocab, vocab, torch.device("cpu"))


@pytest.fixture(scope="module")
def translator():
    return small_translator()


def _tokens(t):
    return t.output_tokens[:-1] if t.output_tokens[-1:] == [EOS] else t.output_tokens


def test_the_models_own_greedy_output_as_prefix_reproduces_it(translator):
    greedy = translator.translate(SOURCES)
    for text, g in zip(SOURCES, greedy):
        if not _tokens(g):
            continue
        (again,) = translator.translate([text], prefix=_tokens(g))
        assert again.output_tokens == g.output_tokens
        assert again.score == pytest.approx(g.score, abs=1e-5)
        np.testing.assert_allclose(again.weights, g.weights, atol=1e-6)


@pytest.mark.parametrize("beam", [1, 3])
def test_prefixed_outputs_start_with_the_prefix_and_score_as_forced_decoding(translator, beam):
    prefix = ["o", "l"]
    results = translator.translate(SOURCES, beam_size=beam, n_best=beam, prefix=prefix)
    for text, t in zip(SOURCES, results):
        assert len(t.nbest) == beam
        for h in t.nbest:
            assert h.output_tokens[:2] == prefix
            assert h.weights.shape == (len(h.output_tokens), len(h.source_tokens))
            np.testing.assert_allclose(h.weights.sum(-1), 1.0, rtol=1e-5)
            if h.output_tokens[-1] != EOS:
                continue  # forced decoding scores finished outputs
            (forced,) = translator.teacher_forced([text], [h.output])
            assert h.score == pytest.approx(forced.score, abs=1e-4)
            np.testing.assert_allclose(h.weights, forced.weights, atol=1e-5)


def test_a_beam_with_a_prefix_ranks_its_whole_outputs(translator):
    (t,) = translator.translate(["hello"], beam_size=4, n_best=4, prefix=["e"])
    alpha = translator.config.decode.alpha
    ranked = [h.score / ((5 + len(h.output_tokens)) / 6) ** alpha for h in t.nbest]
    assert ranked == sorted(ranked, reverse=True)


@pytest.mark.parametrize("token", ["z", "</s>", "<pad>"])
def test_a_prefix_token_outside_the_target_vocabulary_is_named(translator, token):
    with pytest.raises(AttnkitError, match=rf"prefix\[1\]: '{token}'"):
        translator.translate(["abc"], prefix=["a", token])
