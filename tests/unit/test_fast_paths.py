"""The decoding shortcuts compute what the plain path computes."""

from dataclasses import replace

import torch

from attnkit.decoding import beam_search, greedy_decode
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig


def _model(rnn: str = "gru") -> Seq2Seq:
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(
        attention="bahdanau",
        decoder="luong",
        rnn=rnn,
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=8,
        dropout=0.0,
    )
    return Seq2Seq(cfg, 12, 10).eval()


def _source():
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [6, 3, 0, 0, 0]])
    return src, (src != 0).sum(1)


def test_input_table_step_equals_projected_step():
    for rnn in ("gru", "lstm"):
        model = _model(rnn)
        src, lengths = _source()
        tokens = torch.tensor([2, 7, 9])
        with torch.inference_mode():  # decoding: encode builds the (V, G*H) table
            memory, state = model.encode(src, lengths)
            assert memory.input_table is not None
            fast, _, fast_w = model.decoder.step(tokens, state, memory)
            plain, _, plain_w = model.decoder.step(tokens, state, replace(memory, input_table=None))
        torch.testing.assert_close(fast, plain)
        torch.testing.assert_close(fast_w, plain_w)


def test_no_input_table_where_it_would_be_wrong_or_wasted():
    model = _model()
    src, lengths = _source()
    memory, _ = model.encode(src, lengths)  # gradients on: training, the projection must stay live
    assert memory.input_table is None
    with torch.inference_mode():
        assert model.decoder.input_table(rows=model.decoder.embed.num_embeddings - 1) is None
        model.train()  # dropout on the embeddings: a token's projection is not fixed
        assert model.encode(src, lengths)[0].input_table is None


def test_decoding_after_an_in_place_optimizer_step_uses_the_new_weights():
    """Fused Adam updates weights in place without bumping their version counters: nothing from an
    earlier decoding call may survive into the next one."""
    model = _model()
    src, lengths = _source()
    before = greedy_decode(model, src, lengths, max_len=9)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5, fused=True)
    model.train()
    logits, _ = model(src, lengths, src)
    logits.sum().backward()
    optimizer.step()
    model.eval()
    after = greedy_decode(model, src, lengths, max_len=9)
    fresh = _model()
    fresh.load_state_dict(model.state_dict())
    expected = greedy_decode(fresh, src, lengths, max_len=9)
    assert [h.tokens for h in after] == [h.tokens for h in expected]
    for a, e in zip(after, expected):
        torch.testing.assert_close(a.weights, e.weights)
    assert not torch.allclose(before[0].weights, after[0].weights)  # the step changed the model


def test_greedy_drops_finished_rows_without_changing_results():
    model = _model()
    src, lengths = _source()
    greedy = greedy_decode(model, src, lengths, max_len=9)
    beam1 = beam_search(model, src, lengths, max_len=9, beam_size=1)
    for g, (b,) in zip(greedy, beam1):
        assert g.tokens == b.tokens
        assert g.finished == b.finished
        torch.testing.assert_close(g.weights, b.weights)
        assert abs(g.score - b.score) < 1e-4
