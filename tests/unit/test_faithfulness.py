"""Faithfulness tests on hand-built classifiers whose answer is known: one word decides the label
(attention on it must be comprehensive and sufficient, and moving it must change the output), or
no word matters (then any attention gives the same output)."""

import math

import pytest
import torch
from torch import nn

from attnkit.evaluation.faithfulness import (
    Options,
    aopc,
    counts,
    erasure_curves,
    question,
    top_masks,
)
from attnkit.evaluation.faithfulness_attention import seed_variance
from attnkit.evaluation.faithfulness_stats import jsd
from attnkit.evaluation.faithfulness_text import TextClassifierSubject

DECIDER = 5  # the token id whose presence makes the label 1


class Decider(nn.Module):
    """The text classifier's interface (tokens, mask, attention_override), built by hand.

    Embeddings: the decider is (10, 0), every other word (0, 1), padding (0, 0). The attention
    score of a word is 5 x its first coordinate, so the decider takes nearly all the weight.
    Logits: class 0 = 3 x pooled[1], class 1 = pooled[0]. With ``matters`` False the classifier
    ignores the pooled vector (constant logits)."""

    def __init__(self, matters: bool = True):
        super().__init__()
        table = torch.zeros(10, 2)
        table[1:, 1] = 1.0
        table[DECIDER] = torch.tensor([10.0, 0.0])
        self.table = nn.Parameter(table)
        self.matters = matters

    def embed(self, tokens):
        return self.table[tokens]  # (B, S, 2)

    def forward(self, tokens, mask, attention_override=None):
        return self.forward_embedded(self.embed(tokens), mask, attention_override)

    def forward_embedded(self, embedded, mask, attention_override=None):
        scores = (5 * embedded[..., 0]).masked_fill(~mask, -1e9)  # (B, S)
        weights = torch.softmax(scores, -1) * mask
        if attention_override is not None:
            weights = attention_override
        pooled = (weights.unsqueeze(-1) * embedded).sum(1)  # (B, 2)
        logits = torch.stack([3 * pooled[:, 1], pooled[:, 0]], -1)
        if not self.matters:
            logits = torch.tensor([2.0, 0.0]).expand(embedded.size(0), 2) + 0 * logits
        return logits, weights


WORDS = ["the", "film", "was", "not", "good", "at", "all", "really"]
IDS = [1, 2, 3, 4, DECIDER, 6, 7, 8]


def _subject(matters=True):
    return TextClassifierSubject(Decider(matters).eval(), IDS, WORDS)


def test_counts_and_top_masks():
    assert counts(10, (1, 5, 10, 20, 50)) == [1, 1, 1, 2, 5]
    assert counts(3, (1, 50, 100)) == [1, 2, 3]
    masks = top_masks(torch.tensor([[0.1, 0.5, 0.2, 0.5]]), [1, 2, 3])  # tie: first first
    assert masks[0].int().tolist() == [[0, 1, 0, 0], [0, 1, 0, 1], [0, 1, 1, 1]]


def test_the_deciding_word_ranks_first_by_attention_gradients_and_erasure():
    scores = question(_subject(), Options(permutations=0, adversarial_steps=0)).scores
    for name in ("attention", "gradient", "input_x_gradient", "integrated_gradients"):
        assert int(scores[name][0].argmax()) == WORDS.index("good"), name
    assert int(scores["leave_one_out"][0].argmax()) == WORDS.index("good")
    assert scores["leave_one_out"][0].max() > 0.9  # without it the label flips


def test_attention_on_the_deciding_word_is_comprehensive_and_sufficient():
    result = question(_subject(), Options(permutations=0, adversarial_steps=0))
    comp, suff = result.comprehensiveness["attention"], result.sufficiency["attention"]
    assert comp.shape == (1, 5)
    assert (comp > 0.9).all()  # erasing its top word (or more) loses the label
    assert (suff.abs() < 0.01).all()  # keeping only its top words keeps it
    # the random ranking rarely finds the word with one erasure: far less comprehensive
    assert (
        result.comprehensiveness["random"][0, 0] < 0.5 or result.scores["random"][0].argmax() == 4
    )
    assert float(aopc(comp)) > float(aopc(result.comprehensiveness["random"])) - 1e-6


def test_a_permuted_map_changes_the_output_of_a_peaked_attention():
    result = question(_subject(), Options(permutations=100, adversarial_steps=0))
    perm = result.permutation
    assert perm["permutations"] == 100 and perm["max_attention"][0] > 0.99
    # 7 of 8 permutations move the weight off the deciding word: the label flips
    assert perm["median_tvd"][0] > 0.5


def test_attention_that_does_not_matter_survives_permutation_and_adversaries():
    result = question(_subject(matters=False), Options(permutations=20, adversarial_steps=60))
    assert result.permutation["median_tvd"][0] < 1e-6
    # the most different attention within the output budget is far from the original
    assert result.adversarial["max_jsd"][0] > 0.5 * math.log(2)
    assert result.adversarial["output_tvd"][0] <= 0.01


def test_the_adversary_cannot_move_a_deciding_attention_far():
    """With weight a on the decider the logits are (3(1 - a), 10a): keeping the output within
    0.01 TVD needs 13a - 3 >= ln 99, a >= 0.58, so no feasible map is as far from the original as
    one with half the weight moved off the decider."""
    subject = _subject()
    result = question(subject, Options(permutations=0, adversarial_steps=60))
    original = subject.attention()[0]
    half = torch.full((8,), 0.5 / 7)
    half[WORDS.index("good")] = 0.5
    assert 0.0 < result.adversarial["max_jsd"][0] < float(jsd(original, half))


def test_erasure_curves_batch_every_distinct_mask_once():
    subject = _subject()
    calls = []
    predict = subject.predict
    subject.predict = lambda keep: calls.append(keep.shape[0]) or predict(keep)
    scores = {"a": torch.arange(8.0).unsqueeze(0), "b": -torch.arange(8.0).unsqueeze(0)}
    full = torch.tensor([1.0])
    comp, suff = erasure_curves(subject, scores, full, (1, 5, 10, 20, 50))
    assert len(calls) == 1
    # k% of 8 is 1, 1, 1, 2, 4 positions: 3 distinct tops per ranking, erased or kept, 2 rankings;
    # a's top 4 kept is b's top 4 erased (and the other way round): 2 masks fewer
    assert calls[0] == 3 * 2 * 2 - 2
    assert comp["a"].shape == suff["b"].shape == (1, 5)


def test_rank_agreement_of_attention_with_references_is_reported_per_unit():
    result = question(_subject(), Options(permutations=0, adversarial_steps=0))
    cell = result.correlations["attention~leave_one_out"]
    assert set(cell) == {"tau", "tau_p", "rho", "rho_p"} and len(cell["tau"]) == 1
    assert -1.0 <= cell["tau"][0] <= 1.0
    assert "attention~integrated_gradients" in result.correlations
    assert result.to_dict()["units"] == ["label"]


@pytest.mark.parametrize("same", [True, False])
def test_seed_variance(same):
    a = [torch.tensor([[0.5, 0.5, 0.0]])]
    b = [torch.tensor([[0.5, 0.5, 0.0]])] if same else [torch.tensor([[0.0, 0.0, 1.0]])]
    out = seed_variance([a, b])
    assert out["pairs"] == 1
    assert out["mean_jsd"] == pytest.approx(0.0 if same else math.log(2), abs=1e-6)


def test_text_faithfulness_sums_up_sentences(tmp_path):
    from attnkit.errors import AttnkitError
    from attnkit.evaluation.faithfulness_text import text_faithfulness

    class Words:
        table = dict(zip(WORDS, IDS))

        def encode(self, words):
            return [self.table[w] for w in words]

    options = Options(permutations=5, adversarial_steps=2, ig_steps=2)
    sentences = [WORDS, ["the", "film", "was", "good"]]
    scores = text_faithfulness(
        Decider().eval(), Words(), sentences, tmp_path, options, "typed", family="a family"
    )
    assert scores["family"] == "a family" and scores["summary"]["examples"] == 2
    assert (tmp_path / "scores.json").is_file() and (tmp_path / "report.html").is_file()
    with pytest.raises(AttnkitError, match="input 2 is empty"):
        text_faithfulness(Decider().eval(), Words(), [WORDS, []], None, options, "typed", family="")
