"""Head summaries (:mod:`attnkit.explain.head_summary`) on hand-built maps whose scores are known
by construction (a previous-token head scores 1, uniform heads have the uniform entropy, a head on
token 0 has sink share 1, an induction head on ``[x, x]`` scores 1), through
:func:`attnkit.capture` on a module calling SDPA, and end to end on a tiny GPT-2 against its own
eager ``output_attentions``; the picture, the inline view and the command line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attnkit
from attnkit.cli import main
from attnkit.errors import AttnkitError, CaptureError
from attnkit.explain.head_summary import repeated_tokens, summarize

T = 8
PNG = b"\x89PNG\r\n\x1a\n"


def previous_head(size: int = T) -> torch.Tensor:
    """(T, T) each row on the key before it (row 0 on itself)."""
    w = torch.zeros(size, size)
    w[0, 0] = 1.0
    w[torch.arange(1, size), torch.arange(size - 1)] = 1.0
    return w


def sink_head(size: int = T) -> torch.Tensor:
    w = torch.zeros(size, size)
    w[:, 0] = 1.0
    return w


def causal_uniform(size: int = T) -> torch.Tensor:
    return torch.tril(torch.ones(size, size)) / torch.arange(1, size + 1)[:, None]


def induction_head(offset: int, period: int) -> torch.Tensor:
    """(T, T) for ``[offset tokens, x, x]``: the second copy's rows on the token after the same
    token's first occurrence, every other row on token 0."""
    size = offset + 2 * period
    w = sink_head(size)
    for i in range(offset + period, size):
        w[i] = 0.0
        w[i, i - period + 1] = 1.0
    return w


def stack(*heads: torch.Tensor) -> torch.Tensor:
    """(1, H, T, T): one layer of the given heads."""
    return torch.stack(heads)[None]


def test_scores_known_by_construction():
    uniform = torch.full((T, T), 1.0 / T)
    s = summarize(stack(previous_head(), uniform, sink_head()))
    # the sink head: only row 1 reads key 0, the key before it
    assert s.previous[0].tolist() == pytest.approx([1.0, 1.0 / T, 1.0 / (T - 1)])
    assert s.entropy[0].tolist() == pytest.approx([0.0, math.log(T), 0.0])
    assert s.entropy_max == pytest.approx(math.log(T))  # the uniform head reaches it
    assert s.sink[0].tolist() == pytest.approx([2.0 / T, 1.0 / T, 1.0])  # rows 0 and 1 on key 0
    assert s.induction is None  # no repeated sequence said


def test_causal_uniform_heads_have_the_causal_maximum():
    s = summarize(stack(causal_uniform()), causal=True)
    expected = sum(math.log(i + 1) for i in range(T)) / T  # row i sees i + 1 keys
    assert s.entropy[0, 0] == pytest.approx(expected) and s.entropy_max == pytest.approx(expected)
    assert s.entropy_max < math.log(T)


def test_the_induction_score_reads_the_token_after_the_earlier_copy():
    offset, period = 1, 5
    size = offset + 2 * period
    shifted = induction_head(offset, period)
    # attending to the earlier copy itself (i - n) is not induction
    copy = sink_head(size)
    for i in range(offset + period, size):
        copy[i] = 0.0
        copy[i, i - period] = 1.0
    s = summarize(stack(shifted, copy, previous_head(size)), True, period, offset)
    assert s.induction[0].tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert s.period == period and s.offset == offset
    assert s.top("induction", 1) == [
        {"layer": 1, "head": 1, **{n: pytest.approx(v[0, 0]) for n, v in s.scores().items()}}
    ]


def test_the_distance_profile_is_the_mean_row_over_distances():
    uniform = torch.full((T, T), 1.0 / T)
    s = summarize(stack(previous_head(), uniform), causal=False)
    assert s.profile.shape == (1, 2, T)
    assert s.profile.sum(-1) == pytest.approx(np.ones((1, 2)))
    # previous-token: row 0 at distance 0, the others at 1
    assert s.profile[0, 0, :2].tolist() == pytest.approx([1 / T, (T - 1) / T])
    # uniform: (1/T) x the share of the T x T cells at |i - j| = d
    cells = [T] + [2 * (T - d) for d in range(1, T)]
    assert s.profile[0, 1].tolist() == pytest.approx([c / T / T for c in cells])
    assert s.distance[0].tolist() == pytest.approx(
        [(T - 1) / T, sum(d * c for d, c in enumerate(cells)) / T / T]
    )


def test_rows_sort_and_number_from_first():
    layers = torch.stack([stack(sink_head())[0], stack(previous_head())[0]])  # (2, 1, T, T)
    s = summarize(layers, first=1)
    assert [(r["layer"], r["head"]) for r in s.rows()] == [(1, 1), (2, 1)]
    assert [r["layer"] for r in s.rows("previous")] == [2, 1]
    assert [r["layer"] for r in s.top("sink", 1)] == [1]
    assert [r["layer"] for r in s.top("sink", 1, lowest=True)] == [2]
    assert summarize(layers, first=0).rows()[0]["layer"] == 0
    lines = s.table("previous").splitlines()
    assert lines[0].split() == ["layer", "head", "entropy", "sink", "previous", "distance"]
    assert lines[1].split()[:2] == ["2", "1"] and len(lines) == 3


def test_to_dict_plot_and_html(tmp_path):
    s = summarize(stack(previous_head(), sink_head()), True, title="two heads")
    data = json.loads(json.dumps(s.to_dict()))
    assert data["scores"]["previous"] == [[1.0, round(1 / (T - 1), 5)]] and data["causal"] is True
    assert len(data["profile"][0][0]) == T and len(data["rows"]) == 2
    s.plot(tmp_path / "heads.png").clear()
    assert (tmp_path / "heads.png").read_bytes().startswith(PNG)
    page = s.html("sink")
    assert page.count("<tr>") == 3 and "data:image/png;base64," in page and "two heads" in page
    assert page.index("<td>0.000</td>") < page.index("<td>1.000</td>")  # the sink head first


def test_bad_input_says_so_in_one_line():
    for bad, needle in (
        (torch.ones(3, T, T), r"must be \(L, H, T, S\)"),
        (torch.ones(1, 1, 0, 0), r"must be \(L, H, T, S\)"),
    ):
        with pytest.raises(AttnkitError, match=needle):
            summarize(bad)
    with pytest.raises(AttnkitError, match="do not fit"):
        summarize(stack(sink_head()), period=5, offset=0)
    with pytest.raises(AttnkitError, match="needs self-attention"):
        summarize(torch.full((1, 1, 3, 4), 0.25), period=1)
    cross = summarize(torch.full((1, 1, 3, 4), 0.25))
    assert cross.previous is None and cross.profile is None
    with pytest.raises(AttnkitError, match="'induction': this summary has entropy, sink"):
        cross.top("induction")
    with pytest.raises(AttnkitError, match="at least 2 token ids"):
        repeated_tokens([7], 4)


def test_repeated_tokens_are_a_seeded_block_twice():
    ids = repeated_tokens(range(10, 20), 6, seed=3)
    assert ids[:6].tolist() == ids[6:].tolist() and set(ids.tolist()) <= set(range(10, 20))
    assert ids.tolist() == repeated_tokens(range(10, 20), 6, seed=3).tolist()


class PreviousTokenAttention(torch.nn.Module):
    """Two heads through SDPA: head 0 may see only the key before it (row 0 itself), head 1
    every earlier key (causal)."""

    def forward(self, x):  # (B, T, D)
        size = x.shape[1]
        q = k = v = x[:, None].expand(-1, 2, -1, -1)  # (B, 2, T, D)
        only = torch.eye(size, dtype=torch.bool).roll(-1, dims=1)
        only[0] = False
        only[0, 0] = True
        mask = torch.stack([only, torch.ones(size, size).tril().bool()])  # (2, T, T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_a_capture_summarizes_the_weights_it_recovered():
    model = PreviousTokenAttention()
    with attnkit.capture(model) as captured:
        model(torch.randn(2, T, 4))
    s = captured.head_summary(index=1)
    assert s.first == 0 and s.modules == [""] and s.rows()[0]["head"] == 0
    assert s.previous[0, 0] == pytest.approx(1.0)
    with attnkit.capture(model, heads=[0]) as captured:
        model(torch.randn(1, T, 4))
    with pytest.raises(CaptureError, match="capture every head"):
        captured.head_summary()
    with attnkit.capture(model, online="rollout") as captured:
        model(torch.randn(1, T, 4))
    with pytest.raises(CaptureError, match="keeps no maps"):
        captured.head_summary()


# ---- a tiny GPT-2, end to end -------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    pytest.importorskip("transformers", reason="transformers is not installed (attnkit[hf])")
    from attnkit.families.hf.tiny import save_tiny

    return save_tiny("gpt2", tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def eager_maps(directory, ids: list[int]) -> torch.Tensor:
    """(L, H, T, T) the model's own weights, run eager with output_attentions."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(
        directory, attn_implementation="eager"
    ).eval()
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return torch.stack([a[0] for a in out.attentions]).double()


def test_a_tiny_gpt2_summarized_on_a_repeated_block_equals_its_eager_weights(gpt2):
    import transformers

    m = attnkit.load(f"hf:{gpt2}")
    s = m.head_summary(period=6, seed=4)
    tokenizer = transformers.AutoTokenizer.from_pretrained(gpt2)
    allowed = [i for i in range(len(tokenizer)) if i not in set(tokenizer.all_special_ids)]
    ids = repeated_tokens(allowed, 6, seed=4).tolist()  # GPT-2 adds no special tokens
    w = eager_maps(gpt2, ids)  # (L, H, 12, 12)
    induction = torch.stack([w[..., i, i - 5] for i in range(6, 12)], -1).mean(-1)
    previous = torch.stack([w[..., i, i - 1] for i in range(1, 12)], -1).mean(-1)
    entropy = -(w * w.clamp_min(1e-300).log()).sum(-1).mean(-1)
    assert s.causal and s.tokens == 12 and s.layers_and_heads == (2, 4)
    np.testing.assert_allclose(s.induction, induction.numpy(), atol=1e-6)
    np.testing.assert_allclose(s.previous, previous.numpy(), atol=1e-6)
    np.testing.assert_allclose(s.entropy, entropy.numpy(), atol=1e-6)
    np.testing.assert_allclose(s.sink, w[..., 0].mean(-1).numpy(), atol=1e-6)
    r = m.generate("the cat sat", max_new_tokens=3)
    on_text = r.head_summary()
    np.testing.assert_allclose(
        on_text.entropy, summarize(eager_maps(gpt2, r.ids)).entropy, atol=1e-6
    )
    assert on_text.induction is None and on_text.causal


def test_the_explain_command_prints_the_table_and_draws_the_grids(gpt2, tmp_path, capsys):
    picture = tmp_path / "heads.png"
    argv = ["explain", "--model", f"hf:{gpt2}", "--heads", "-o", str(picture)]
    assert main([*argv, "--sort", "previous"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:4] == ["layer", "head", "entropy", "sink"] and len(out) == 2 + 8 + 1
    previous = [float(line.split()[4]) for line in out[2:10]]
    assert previous == sorted(previous, reverse=True)
    assert picture.read_bytes().startswith(PNG)
    assert (
        main(["explain", "--model", f"hf:{gpt2}", "--heads", "the cat", "--out", str(tmp_path)])
        == 0
    )
    saved = json.loads((tmp_path / "heads.json").read_text(encoding="utf-8"))
    assert saved["period"] is None and len(saved["rows"]) == 8
    capsys.readouterr()
    assert main([*argv, "--json", "--sort", "sink"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8 and [r["sink"] for r in rows] == sorted(
        (r["sink"] for r in rows), reverse=True
    )
    for extra, needle in (([], "-o FILE"), (["-o", str(tmp_path / "h.gif")], ".png, .svg")):
        capsys.readouterr()
        assert main(["explain", "--model", f"hf:{gpt2}", "--heads", *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
