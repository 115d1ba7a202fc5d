"""attnkit's lenses on pretrained Hugging Face models (tiny ones, built from configs, offline):
gradient saliency beside attention (``m.explain``), the faithfulness tests of a classifier
(``attnkit faithfulness --model hf:DIR``) and the AER of a translator's cross-attention against
human word alignments (``attnkit evaluate --model hf:DIR --gold PATH``). The numbers of random
models mean nothing: the tests check where they come from."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import attnkit

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install attnkit[hf])"
)
from attnkit.cli import main  # noqa: E402 - after the skip
from attnkit.errors import AttnkitError  # noqa: E402
from attnkit.evaluation.faithfulness import Options, question  # noqa: E402
from attnkit.families.hf.aligning import owners, word_map  # noqa: E402
from attnkit.families.hf.erasure import PretrainedClassifierSubject, read_texts  # noqa: E402
from attnkit.families.hf.words import Tokens  # noqa: E402

TEXT = "the cat sat on the mat"


pytestmark = pytest.mark.usefixtures("hf_offline")  # tests/conftest.py: nothing downloaded


def _resaved(source, target, heads=None):
    """The tiny BERT classifier with larger random weights (its answer then moves when its input
    does), ``heads`` attention heads over the same weights."""
    model = transformers.AutoModelForSequenceClassification.from_pretrained(source)
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" not in name:
                p.normal_(0, 0.3)
    if heads is not None:
        model.config.num_attention_heads = heads
    model.save_pretrained(target)
    transformers.AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


@pytest.fixture(scope="module")
def sharp(tiny_hf, tmp_path_factory):
    return _resaved(tiny_hf("bert"), tmp_path_factory.mktemp("sharp"))


def _one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


# ---- saliency ---------------------------------------------------------------------------------
def test_the_saliency_of_a_label_is_the_gradient_of_its_log_probability(tiny_hf):
    directory = tiny_hf("bert")
    explained = attnkit.load(f"hf:{directory}").explain(TEXT)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(directory).eval()
    encoding = transformers.AutoTokenizer.from_pretrained(directory)(TEXT, return_tensors="pt")
    embedded = model.get_input_embeddings()(encoding["input_ids"]).detach().requires_grad_(True)
    logits = model(inputs_embeds=embedded, attention_mask=encoding["attention_mask"]).logits[0]
    logits.log_softmax(-1)[logits.argmax()].backward()
    norms = embedded.grad[0].norm(dim=-1)
    assert explained.output_tokens == [explained.output]
    assert model.config.id2label[int(logits.argmax())] == explained.output
    np.testing.assert_allclose(explained.saliency[0], (norms / norms.sum()).numpy(), atol=1e-5)
    assert (
        explained.attention.shape == explained.saliency.shape == (1, len(encoding["input_ids"][0]))
    )
    assert explained.attention.sum() == pytest.approx(1.0, abs=1e-5)
    assert set(explained.scores) == {"argmax_agreement", "rank_correlation"}


def test_each_generated_token_depends_only_on_the_positions_before_it(tiny_hf):
    m = attnkit.load(f"hf:{tiny_hf('gpt2')}")
    prompt = len(m._text(TEXT)[1])
    for method in ("gradient", "integrated_gradients"):
        explained = m.explain(TEXT, method=method)
        sal = explained.saliency  # (U, T)
        assert sal.shape[0] == sal.shape[1] - prompt > 0
        np.testing.assert_allclose(sal.sum(1), 1.0, atol=1e-5)
        for j in range(sal.shape[0]):  # token prompt + j is predicted at position prompt + j - 1
            assert np.all(sal[j, prompt + j :] == 0.0)
            assert np.all(explained.attention[j, prompt + j :] < 1e-7)  # causal attention too


def test_a_translation_is_explained_over_its_source_in_tokens_or_words(tiny_hf, tmp_path):
    m = attnkit.load(f"hf:{tiny_hf('marian')}")
    result = m.translate(TEXT)[0]
    explained = m.explain(TEXT, method="input_x_gradient")
    np.testing.assert_allclose(explained.attention, result.weights, atol=1e-6)
    assert explained.saliency.shape == result.weights.shape
    assert explained.source_tokens == result.source_tokens
    words = m.explain(TEXT, words=True)
    part = result.parts["cross"]
    assert words.saliency.shape == (len(part.queries.units()), len(part.keys.units()))
    np.testing.assert_allclose(words.saliency.sum(1), 1.0, atol=1e-5)
    assert words.source_tokens[:6] == TEXT.split()
    explained.plot(str(tmp_path / "beside.png")).clear()  # attention and saliency side by side
    assert (tmp_path / "beside.png").stat().st_size > 0
    assert "saliency" in json.dumps(explained.to_dict())


def test_saliency_refuses_in_one_line(tiny_hf):
    with pytest.raises(AttnkitError) as error:
        attnkit.load(f"hf:{tiny_hf('bert')}").explain(TEXT, method="lime")
    assert "gradient" in _one_line(error)
    with pytest.raises(AttnkitError) as error:
        attnkit.load(f"hf:{tiny_hf('bert-encoder')}").explain(TEXT)
    assert "encoding" in _one_line(error)


# ---- faithfulness -----------------------------------------------------------------------------
def test_comprehensiveness_is_the_drop_of_the_models_own_probability(sharp):
    subject = PretrainedClassifierSubject(attnkit.load(f"hf:{sharp}"), TEXT)
    options = Options(percents=(20, 50), permutations=0, adversarial_steps=0, ig_steps=2)
    scores = question(subject, options)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(sharp).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(sharp)
    ids = tokenizer(TEXT)["input_ids"]  # [CLS] ... [SEP]: the specials are never erased
    assert subject.positions == tokenizer.convert_ids_to_tokens(ids[1:-1])

    def probability(kept: list[int]) -> float:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([kept])).logits[0]
        return float(logits.softmax(-1)[int(subject.targets[0])])

    full = probability(ids)
    for name in ("attention", "random", "integrated_gradients"):
        order = np.argsort(-scores.scores[name][0].numpy(), kind="stable")
        sizes = [math.ceil(len(subject.positions) * k / 100) for k in (20, 50)]
        for k, size in enumerate(sizes):
            erased = {int(i) + 1 for i in order[:size]}
            left = [t for n, t in enumerate(ids) if n not in erased]
            kept = [ids[0], *[ids[int(i) + 1] for i in sorted(order[:size])], ids[-1]]
            comp = scores.comprehensiveness[name][0, k]
            suff = scores.sufficiency[name][0, k]
            assert float(comp) == pytest.approx(full - probability(left), abs=1e-5)
            assert float(suff) == pytest.approx(full - probability(kept), abs=1e-5)


def test_the_random_ranking_is_seeded(sharp):
    m = attnkit.load(f"hf:{sharp}")
    quick = {"permutations": 0, "adversarial_steps": 0, "ig_steps": 2}
    runs = [
        question(PretrainedClassifierSubject(m, TEXT), Options(seed=s, **quick)) for s in (0, 0, 1)
    ]
    assert torch.equal(runs[0].scores["random"], runs[1].scores["random"])
    assert not torch.equal(runs[0].scores["random"], runs[2].scores["random"])


def test_the_replaced_attention_row_is_the_models_own_when_given_its_own(sharp, tmp_path):
    """With one head, the row the permutation test replaces is exactly the model's: given its own
    weights the output is unchanged; given others, it moves."""
    one_head = _resaved(sharp, tmp_path / "one", heads=1)
    subject = PretrainedClassifierSubject(attnkit.load(f"hf:{one_head}"), TEXT)
    everything = torch.ones(1, len(subject.positions), dtype=torch.bool)
    own = subject.predict(everything)
    with torch.no_grad():
        same = subject.predict_with_attention(subject.attention().unsqueeze(0))
        spread = torch.full((1, 1, len(subject.positions)), 1.0 / len(subject.positions))
        other = subject.predict_with_attention(spread)
    torch.testing.assert_close(same, own, atol=1e-5, rtol=0)
    assert float((other - own).abs().max()) > 1e-4


def test_the_faithfulness_command_reads_a_file_of_texts(sharp, tiny_hf, tmp_path, capsys):
    data = tmp_path / "texts.tsv"
    data.write_text(
        "(3 (2 the) (3 (2 cat) (2 sat)))\npositive\ta dog barked\nthe model looked\n",
        encoding="utf-8",
    )
    assert read_texts(data) == ["the cat sat", "a dog barked", "the model looked"]
    quick = ["--permutations", "3", "--adversarial-steps", "2", "--ig-steps", "2"]
    argv = ["faithfulness", "--model", f"hf:{sharp}", "--data", str(data), "--count", "2"]
    assert main([*argv, *quick, "--out", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    assert written["summary"]["examples"] == 2
    assert {"attention", "rollout", "gradient", "random"} <= set(written["summary"]["erasure"])
    assert written["summary"]["permutation"] is not None
    capsys.readouterr()
    for bad in (
        [*argv, "--split", "test"],
        ["faithfulness", "--model", f"hf:{tiny_hf('gpt2')}", "the cat"],
    ):
        assert main([*bad, *quick]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ---- AER --------------------------------------------------------------------------------------
def test_tokens_are_laid_along_the_gold_words_by_their_characters():
    tokens = Tokens(
        ["[CLS]", "aujourd", "'", "hui", "le", "##s", "[SEP]"],
        [None, 0, 1, 2, 3, 3, None],
        {0: "aujourd", 1: "'", 2: "hui", 3: "les"},
    )
    assert owners(tokens, ["aujourd'hui", "les"]) == [None, 0, 0, 0, 1, 1, None]
    assert owners(tokens, ["aujourd'hui", "la"]) is None


def test_a_hand_built_alignment_scores_the_aer_worked_out_by_hand():
    from attnkit.data.tasks.alignment import Alignment
    from attnkit.evaluation.alignment import alignment_metrics

    # target tokens "▁a ▁do g </s>", source "▁the ▁c at </s>": word 0 of the target looks most
    # at the token "▁the", but at the word "cat" (0.3 + 0.3) once its pieces are summed
    heads = np.array(
        [
            [0.4, 0.3, 0.3, 0.0],
            [0.7, 0.1, 0.1, 0.1],
            [0.5, 0.2, 0.2, 0.1],
            [0.2, 0.2, 0.2, 0.4],
        ]
    )
    words = word_map(heads, [0, 1, 1, None], [0, 1, 1, None])
    # rows: "a" as it is, "dog" the mean of its pieces' rows (0.6, 0.15, 0.15); columns summed
    # to (0.6, 0.3), renormalised
    np.testing.assert_allclose(words, [[0.4, 0.6], [2 / 3, 1 / 3]], atol=1e-9)
    # links found: (0, 1) and (1, 0); gold, both sure: (0, 1) and (1, 1)
    gold = Alignment(frozenset({(0, 1), (1, 1)}), frozenset({(0, 1), (1, 1)}))
    assert alignment_metrics([(words, gold)])["aer"] == pytest.approx(50.0)


def test_aer_is_zero_against_the_models_own_links_and_the_command_prints_it(
    tiny_hf, tmp_path, capsys
):
    from attnkit.families.hf.aligning import cross_maps

    m = attnkit.load(f"hf:{tiny_hf('marian')}")
    pairs = [("the cat sat", "a dog barked"), ("attention is all you need", "the model looked")]
    own, other = [], []
    for source, target in pairs:
        heads, t, s = cross_maps(m, source, target)
        words = word_map(heads.mean(0), owners(t, target.split()), owners(s, source.split()))
        best = words.argmax(1)
        own.append(" ".join(f"{i + 1}-{j + 1}" for j, i in enumerate(best)))
        other.append(
            " ".join(f"{(i + 1) % words.shape[1] + 1}-{j + 1}" for j, i in enumerate(best))
        )
    (tmp_path / "p.src-tgt").write_text("".join(f"{s} ||| {t}\n" for s, t in pairs), "utf-8")
    for links, aer in ((own, 0.0), (other, 100.0)):
        (tmp_path / "p.gold").write_text("\n".join(links) + "\n", encoding="utf-8")
        scores = m.alignment_error(tmp_path)
        assert (scores["aer"], scores["pairs"], scores["skipped"]) == (aer, 2, 0)
    assert [r["layer"] for r in scores["per_layer"]] == [1, 2]
    assert m.alignment_error(tmp_path, layer=2)["aer"] == scores["per_layer"][1]["aer"]
    capsys.readouterr()
    argv = ["evaluate", "--model", f"hf:{tiny_hf('marian')}", "--gold", str(tmp_path)]
    assert main([*argv, "--out", str(tmp_path / "eval")]) == 0
    assert "AER 100.0%" in capsys.readouterr().out
    written = json.loads((tmp_path / "eval" / "scores.json").read_text(encoding="utf-8"))
    assert written["aer"] == 100.0 and written["per_layer"] == scores["per_layer"]
    for bad in (
        ["--model", f"hf:{tiny_hf('marian')}"],
        ["--model", f"hf:{tiny_hf('bert')}", "--gold", str(tmp_path)],
    ):
        assert main(["evaluate", *bad]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_api_docs_lenses_example_runs(tmp_path, monkeypatch):
    """docs/API.md's Pretrained Transformers examples, the lenses' after the first, as written."""
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "API.md"
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## Pretrained Transformers") :]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    # the section's first example (it saves the tiny models) and the lenses' (alignment_error)
    blocks = [blocks[0]] + [b for b in blocks[1:] if "alignment_error" in b]
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(doc), "exec"), namespace)  # noqa: S102 - the doc's own code
    assert 0.0 <= namespace["marian"].alignment_error("runs/pairs.gold")["aer"] <= 100.0


def test_the_explain_command_draws_one_text_or_writes_a_report(tiny_hf, tmp_path, capsys):
    model = f"hf:{tiny_hf('marian')}"
    picture = tmp_path / "pair.png"
    assert main(["explain", "--model", model, TEXT, "-o", str(picture)]) == 0
    assert picture.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()
    argv = ["explain", "--model", model, TEXT, "a dog barked", "--method", "integrated-gradients"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert (scores["method"], scores["inputs"]) == ("integrated_gradients", 2)
    written = json.loads((tmp_path / "out" / "explanations.json").read_text(encoding="utf-8"))
    assert len(written) == 2 and (tmp_path / "out" / "report.html").is_file()
    for bad in ([model], [model, TEXT, "--split", "test"], [model, TEXT, "a", "-o", str(picture)]):
        assert main(["explain", "--model", *bad]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_read_position_is_the_first_unless_the_attention_is_causal():
    from attnkit.families.hf.gradients import reading_position

    full = np.full((2, 3, 4, 4), 0.25)
    causal = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    assert reading_position(full) == 0
    assert reading_position(np.broadcast_to(causal, (2, 3, 4, 4))) == 3


def test_a_replaced_row_is_the_given_weights_times_each_heads_shared_values():
    import torch.nn.functional as F

    from attnkit.families.hf.erasure import replaced_row

    class Attention(torch.nn.Module):  # 4 query heads sharing 2 key/value heads
        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, h, 5, 3, generator=gen) for h in (4, 2, 2))
    weights = torch.softmax(torch.randn(1, 5, generator=gen), -1)
    model = Attention()
    plain = model(q, k, v)
    with replaced_row(model, 0, 2, weights):
        replaced = model(q, k, v)
    for head in range(4):
        torch.testing.assert_close(replaced[0, head, 2], weights[0] @ v[0, head // 2])
    others = [0, 1, 3, 4]
    torch.testing.assert_close(replaced[:, :, others], plain[:, :, others])
    assert model(q, k, v).equal(plain)  # the function put back


@pytest.mark.parametrize("pad", [None, 0])
def test_a_causal_classifier_is_read_at_its_last_token(tiny_hf, tmp_path, pad):
    """GPT-2's classifier reads the last token (without a padding token, one row at a time)."""
    source = tiny_hf("gpt2")
    config = transformers.AutoConfig.from_pretrained(source)
    config.architectures, config.num_labels, config.pad_token_id = None, 2, pad
    torch.manual_seed(0)
    transformers.GPT2ForSequenceClassification(config).save_pretrained(tmp_path)
    transformers.AutoTokenizer.from_pretrained(source).save_pretrained(tmp_path)
    m = attnkit.load(f"hf:{tmp_path}")
    subject = PretrainedClassifierSubject(m, TEXT)
    assert subject.read == len(subject.ids) - 1
    probs = m.classify(TEXT).probs
    everything = torch.ones(1, len(subject.positions), dtype=torch.bool)
    np.testing.assert_allclose(
        subject.predict(everything)[0, 0].numpy(), list(probs.values()), atol=1e-5
    )
    options = Options(percents=(50,), permutations=3, adversarial_steps=2, ig_steps=2)
    scores = question(subject, options)
    assert scores.permutation["permutations"] == 3 and len(scores.adversarial["max_jsd"]) == 1
