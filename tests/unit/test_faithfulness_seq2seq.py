"""The seq2seq subject: erasures, attention replaced, per decoding step, on tiny untrained models
of every decoder kind (the tests need no skill, only the model's own function)."""

import math

import pytest
import torch

from attnkit.data.tasks.registry import build_splits
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import Vocab
from attnkit.errors import AttnkitError
from attnkit.evaluation.faithfulness import Options, decided, question
from attnkit.evaluation.faithfulness_seq2seq import Seq2SeqSubject, plain
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.architectures import build_model

RNN = {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16, "attention_dim": 8,
       "dropout": 0.0}  # fmt: skip
MODELS = {
    "bahdanau": {**RNN, "attention": "bahdanau"},
    "multihead": {**RNN, "attention": "multihead", "heads": 2},
    "luong-whole": {**RNN, "attention": "luong-general", "input_feeding": False},
    "uniform": {**RNN, "attention": "uniform"},
    "none": {**RNN, "attention": "none"},
    "transformer": {"arch": "transformer", "embedding_dim": 16, "encoder_layers": 2,
                    "decoder_layers": 2, "heads": 2, "ff_dim": 32, "dropout": 0.0},
}  # fmt: skip


def make_translator(model_cfg: dict, seed: int = 0) -> Translator:
    data = {"task": "numbers", "languages": ["de"], "max_number": 99}
    cfg = experiment_from_dict({"data": data, "model": model_cfg, "decode": {"max_len_cap": 5}})
    splits = build_splits(cfg.data)
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in splits.train + splits.test)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in splits.train + splits.test)
    torch.manual_seed(seed)
    model = build_model(cfg.model, len(src_vocab), len(tgt_vocab)).eval()
    return Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu"))


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    translator = make_translator(MODELS[request.param])
    with plain(translator.model):
        yield request.param, translator, Seq2SeqSubject(translator, "dreiundzwanzig")


def test_units_are_the_steps_of_the_own_output_and_nothing_erased_is_the_model_itself(case):
    name, translator, subject = case
    (own,) = translator.translate(["dreiundzwanzig"], heads=False)
    assert subject.positions == own.source_tokens
    assert len(subject.units) == len(subject.targets)
    full = decided(subject.predict(torch.ones(1, len(subject.positions), dtype=torch.bool)),
                   subject.targets)[0]  # fmt: skip
    if own.output_tokens[-1] == "</s>":  # the forced output's log-probability is the score
        assert float(full.log().sum()) == pytest.approx(own.score, abs=1e-4)


def test_an_erased_token_is_removed_from_the_source(case):
    name, translator, subject = case
    keep = torch.ones(2, len(subject.positions), dtype=torch.bool)
    keep[1, 0] = False  # without the first letter
    probs = subject.predict(keep)
    shorter = Seq2SeqSubject(translator, "reiundzwanzig")
    shorter.tgt_in, shorter.targets = subject.tgt_in, subject.targets  # the same forced output
    alone = shorter.predict(torch.ones(1, len(shorter.positions), dtype=torch.bool))
    torch.testing.assert_close(probs[1], alone[0], atol=1e-5, rtol=1e-4)
    nothing = subject.predict(torch.zeros(1, len(subject.positions), dtype=torch.bool))
    assert torch.isfinite(nothing).all()


def test_the_own_attention_given_back_changes_nothing_and_another_one_does(case):
    name, translator, subject = case
    attention = subject.attention()
    if name in ("transformer", "none"):
        assert attention is None
        return
    assert attention.shape == (len(subject.units), len(subject.positions))
    torch.testing.assert_close(attention.sum(-1), torch.ones(len(subject.units)))
    keep = torch.ones(1, len(subject.positions), dtype=torch.bool)
    own = subject.predict_with_attention(attention.unsqueeze(0))
    torch.testing.assert_close(own, subject.predict(keep), atol=1e-5, rtol=1e-4)
    other = torch.zeros_like(attention)
    other[:, 0] = 1.0
    moved = subject.predict_with_attention(other.unsqueeze(0))
    assert (moved - own).abs().max() > 1e-4
    assert translator.model.decoder.attention.__class__.__name__ != "GivenAttention"


def test_uniform_attention_is_uniform_over_the_source(case):
    name, translator, subject = case
    if name == "uniform":
        s = len(subject.positions)
        torch.testing.assert_close(subject.attention(), torch.full((len(subject.units), s), 1 / s))


def test_every_test_runs_per_decoding_step(case):
    name, translator, subject = case
    result = question(subject, Options(ig_steps=4, permutations=8, adversarial_steps=3))
    u, s = len(subject.units), len(subject.positions)
    assert result.comprehensiveness["random"].shape == (u, 5)
    assert result.scores["integrated_gradients"].shape == (u, s)
    expected = {"none": set(), "transformer": {"attention", "rollout", "flow"}}
    maps = expected.get(name, {"attention"})
    assert {n for n in result.scores if n in ("attention", "rollout", "flow")} == maps
    attends = name not in ("none", "transformer")
    assert (result.permutation is not None) == attends
    assert (result.adversarial is not None) == attends
    if attends:
        assert all(0 <= x <= math.log(2) + 1e-6 for x in result.adversarial["max_jsd"])


def test_an_ensemble_is_refused():
    class Ensemble(torch.nn.Module):
        members = [1, 2]

    with pytest.raises(AttnkitError, match="ensemble"), plain(Ensemble()):
        pass
