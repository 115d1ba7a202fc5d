"""Attention rollout and flow against values computed by hand on a 2-layer, 2-token toy, and on a
tiny Transformer."""

import pytest
import torch

from attnkit.data.vocab import BOS_ID, EOS_ID
from attnkit.explain.rollout import (
    along_output,
    cross_flow,
    cross_rollout,
    flow,
    flow_work,
    rollout,
    rollout_by_layer,
    transformer_maps,
    with_residual,
)
from attnkit.models.transformer import Transformer, TransformerConfig

# rows = queries; layer 0 is the lowest
TOY = torch.tensor([[[1.0, 0.0], [0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]]])
# with the residual, 0.5 A + 0.5 I: [[1, 0], [.25, .75]] and [[.75, .25], [0, 1]]


def test_residual_rows_are_renormalised():
    mixed = with_residual(torch.tensor([[[0.2, 0.2], [0.0, 0.0]]]))  # rows not summing to 1
    torch.testing.assert_close(mixed.sum(-1), torch.ones(1, 2))
    # (.1 + .5, .1) / .7
    torch.testing.assert_close(mixed[0, 0], torch.tensor([0.6 / 0.7, 0.1 / 0.7]))


def test_rollout_by_hand():
    # [[.75, .25], [0, 1]] @ [[1, 0], [.25, .75]]
    expected = torch.tensor([[0.8125, 0.1875], [0.25, 0.75]])
    torch.testing.assert_close(rollout(TOY), expected)
    torch.testing.assert_close(
        rollout(TOY, residual=False), torch.tensor([[0.75, 0.25], [0.5, 0.5]])
    )
    by_layer = rollout_by_layer(TOY)
    torch.testing.assert_close(by_layer[0], torch.tensor([[1.0, 0.0], [0.25, 0.75]]))
    torch.testing.assert_close(by_layer[1], expected)


def test_flow_by_hand():
    """Top 0 -> input 0: 0.75 through middle 0 plus 0.25 through middle 1 (its edge to input 0
    holds 0.25); top 0 -> input 1: only through middle 1, min(0.25, 0.75); top 1 -> input 0:
    min(1, 0.25); top 1 -> input 1: min(1, 0.75). Raw on request; by default each row divided
    by its sum, as Abnar & Zuidema's code does (rows of 1.25 and 1.0 here)."""
    raw = torch.tensor([[1.0, 0.25], [0.25, 0.75]])
    torch.testing.assert_close(flow(TOY, normalize=False), raw)
    torch.testing.assert_close(flow(TOY), torch.tensor([[0.8, 0.2], [0.25, 0.75]]))
    torch.testing.assert_close(flow(TOY).sum(-1), torch.ones(2))


def test_encoder_decoder_variants_by_hand():
    one = torch.tensor([[1.0, 0.0]])
    torch.testing.assert_close(cross_rollout(one, TOY), torch.tensor([[0.8125, 0.1875]]))
    torch.testing.assert_close(cross_flow(one, TOY, normalize=False), torch.tensor([[1.0, 0.25]]))
    torch.testing.assert_close(cross_flow(one, TOY), torch.tensor([[0.8, 0.2]]))
    half = torch.tensor([[0.5, 0.5]])
    torch.testing.assert_close(cross_rollout(half, TOY), torch.tensor([[0.53125, 0.46875]]))
    # to input 0: 0.5 through top 0 and middle 0, 0.25 more through middle 1's edge;
    # to input 1: middle 1 gets 0.25 from top 0 and 0.5 from top 1, its edge holds 0.75
    torch.testing.assert_close(cross_flow(half, TOY, normalize=False), torch.tensor([[0.75, 0.75]]))
    torch.testing.assert_close(cross_flow(half, TOY), torch.tensor([[0.5, 0.5]]))


def test_a_row_no_path_reaches_stays_zero_when_normalised():
    cut = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # no residual: top 0 reaches input 0 alone
    torch.testing.assert_close(flow(cut, residual=False), torch.eye(2))
    torch.testing.assert_close(
        cross_flow(torch.zeros(1, 2), cut, residual=False), torch.zeros(1, 2)
    )


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    cfg = TransformerConfig(
        embedding_dim=16, encoder_layers=2, decoder_layers=2, heads=2, ff_dim=32, dropout=0.0
    )
    return Transformer(cfg, 12, 12).eval()


def test_transformer_maps(transformer):
    src = torch.tensor([[4, 5, 6, 7, 2]])
    tgt_in = torch.tensor([[1, 8, 9]])
    maps = transformer_maps(transformer, src, tgt_in)
    assert maps["encoder_attention"].shape == (2, 5, 5)
    for name in ("attention", "rollout", "flow"):
        assert maps[name].shape == (3, 5), name
    torch.testing.assert_close(maps["rollout"].sum(-1), torch.ones(3))
    torch.testing.assert_close(maps["encoder_rollout"], rollout(maps["encoder_attention"]))
    # each step's flow over the source is normalised, as the reference's (Abnar & Zuidema)
    torch.testing.assert_close(maps["flow"].sum(-1), torch.ones(3))
    torch.testing.assert_close(maps["encoder_flow"].sum(-1), torch.ones(5))
    assert (maps["flow"] >= 0).all()


def test_encoder_attention_rows_are_distributions_over_the_real_tokens(transformer):
    src = torch.tensor([[4, 5, 6, 2], [4, 2, 0, 0]])
    weights = transformer.encoder_attention(src)  # (B, L, H, S, S)
    assert weights.shape == (2, 2, 2, 4, 4)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 2, 4))
    assert (weights[1, ..., 2:] == 0).all()


def test_along_an_output_flow_is_bounded_by_its_work(transformer):
    """The maps of a source forced along an output (ended: "</s>" its last row) are
    transformer_maps' of the same decoder inputs; above the bound of work flow is left out and a
    line says why, with the numbers it compared."""
    src, out = [4, 5, 6, 7, EOS_ID], [8, 9]
    want = transformer_maps(transformer, torch.tensor([src]), torch.tensor([[BOS_ID, 8, 9]]))
    work = flow_work(2, 5, 3)
    assert work == 3 * 5 * 2 * 5 * 5
    maps, note = along_output(transformer, src, out, ended=True, max_work=work)
    assert note is None
    for name in ("rollout", "flow"):
        torch.testing.assert_close(torch.from_numpy(maps[name]), want[name])
    maps, note = along_output(transformer, src, out, ended=True, max_work=work - 1)
    assert "flow" not in maps and f"{work:,}" in note and f"{work - 1:,}" in note
    torch.testing.assert_close(torch.from_numpy(maps["rollout"]), want["rollout"])
    cut, _ = along_output(transformer, src, out, ended=False)  # no "</s>": two rows, <s> and 8 in
    torch.testing.assert_close(torch.from_numpy(cut["rollout"]), want["rollout"][:2])
