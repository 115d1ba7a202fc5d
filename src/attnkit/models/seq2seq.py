"""RNN encoder-decoder with attention, readable top to bottom.

Encoder: embeddings -> GRU/LSTM (layers, optionally bidirectional, packed so
padding never enters the states). Its states are the attention memory.

Two decoder styles, both holding any attention from :mod:`attnkit.attention`:

* ``bahdanau`` (Bahdanau et al. 2015): the previous state s_{t-1} queries the
  memory, the context c_t enters the RNN input [y_{t-1}; c_t], and the output
  reads tanh(W_o [s_t; c_t; y_{t-1}]).
* ``luong`` (Luong et al. 2015): the RNN steps first on [y_{t-1}; h~_{t-1}]
  (input feeding) or y_{t-1} alone; the new state h_t queries the memory; the
  attentional vector h~_t = tanh(W_c [c_t; h_t]) feeds the output layer. Without
  input feeding the RNN runs over the whole target in one call and attention
  for all steps is one batched matmul.

The decoder state starts from the encoder through a learned bridge:
s_0 = tanh(W_b [final forward state; final backward state]).

Shapes: B batch, S source length, T target length, E embedding width,
H decoder hidden, Dk encoder state width (hidden x directions), V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.attention import build_attention
from attnkit.attention.modules import ATTENTION_TYPES, BahdanauAttention, LuongAttention, ScaledDotAttention
from attnkit.data.vocab import PAD_ID
from attnkit.config import join_key
from attnkit.errors import ConfigError
from attnkit.models.dropout import Dropout, dropout, keep_mask
from attnkit.models.rnn_recurrence import reversal_index, rnn_layer
from attnkit.models.teacher_forcing_loop import LoopSpec, run_bahdanau_loop, run_loop


@dataclass
class Seq2SeqConfig:
    """The model section of an experiment file."""

    attention: str = "bahdanau"  # bahdanau | luong-dot | luong-general | luong-concat | scaled-dot | multihead
    decoder: str = "auto"  # bahdanau | luong | auto (bahdanau for bahdanau attention, else luong)
    rnn: str = "gru"  # gru | lstm
    embedding_dim: int = 64
    encoder_hidden: int = 128  # per direction
    encoder_layers: int = 1
    bidirectional: bool = True
    decoder_hidden: int = 256
    decoder_layers: int = 1
    attention_dim: int = 128  # width of additive/projected attention spaces
    heads: int = 4  # multihead only
    input_feeding: bool = True  # luong decoder only
    dropout: float = 0.1

    CHOICES = {
        "attention": tuple(ATTENTION_TYPES),
        "decoder": ("auto", "bahdanau", "luong"),
        "rnn": ("gru", "lstm"),
    }
    #: keys that only some attentions / decoders read (see attnkit.config.check_applicable)
    APPLIES = {"heads": ("attention", ("multihead",)),
               "input_feeding": ("decoder_style", ("luong",), "decoder")}

    def validate(self, where: str) -> None:
        for name in ("embedding_dim", "encoder_hidden", "encoder_layers", "decoder_hidden", "decoder_layers",
                     "attention_dim", "heads"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{join_key(where, name)}: must be at least 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"{join_key(where, 'dropout')}: must be in [0, 1), got {self.dropout}")

    @property
    def decoder_style(self) -> str:
        if self.decoder != "auto":
            return self.decoder
        return "bahdanau" if self.attention == "bahdanau" else "luong"

    @property
    def memory_dim(self) -> int:
        return self.encoder_hidden * (2 if self.bidirectional else 1)


@dataclass
class Memory:
    """What the decoder attends to, computed once per source batch.

    states (B, S, Dk); projected: the attention's precomputed keys; mask (B, S) bool;
    input_table (V, G*H) or None: every target token's layer-0 input gates, for decoding
    (:meth:`Decoder.input_table`). It lives exactly as long as one decoding call's memory,
    so no weight update can ever meet a stale table.
    """

    states: Tensor
    projected: Any
    mask: Tensor
    input_table: Tensor | None = None

    def index_select(self, index: Tensor) -> "Memory":
        """Rows in ``index`` order (beam search expands B to B*K); the token table has no rows."""
        return Memory(self.states.index_select(0, index), _index_select(self.projected, index),
                      self.mask.index_select(0, index), self.input_table)


def _index_select(x: Any, index: Tensor, dim: int = 0) -> Any:
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return type(x)(_index_select(v, index, dim) for v in x)
    return x.index_select(dim, index)


@dataclass
class DecoderState:
    """rnn: (L, B, H) for GRU or a pair of them for LSTM; feed: (B, H) the input-fed vector or None."""

    rnn: Any
    feed: Tensor | None = None

    def index_select(self, index: Tensor) -> "DecoderState":
        return DecoderState(_index_select(self.rnn, index, dim=1), _index_select(self.feed, index))


def _cuda_cell_step(lstm: bool, inp: Tensor, x_proj: Tensor, h: Tensor, c: Tensor | None, w_ih: Tensor,
                    w_hh: Tensor, b_hh: Tensor) -> tuple[Tensor, Tensor | None]:
    """One LSTM/GRU cell step on CUDA whose input gates get a per-row bias: x_proj (B, G*H), the hoisted projection.

    ``torch.lstm_cell``/``gru_cell`` on CUDA require 1-D biases, so the gates are formed here and handed to the
    same fused kernels those functions call, with both biases already inside the gates: ``x_proj + inp W_ih^T``
    (x_proj holds b_ih) and ``h W_hh^T + b_hh`` (GRU's reset gate multiplies this whole term, b_hh included, as
    nn.GRU does). The kernels get no separate biases (given a hidden bias alone, they leave it out: seen on an H100).
    Returns the new h (B, H) and, for an LSTM, the new c (B, H).
    """
    input_gates = torch.addmm(x_proj, inp, w_ih.t())  # (B, G*H)
    hidden_gates = F.linear(h, w_hh, b_hh)  # (B, G*H)
    if lstm:
        h_new, c_new, _ = torch.ops.aten._thnn_fused_lstm_cell(input_gates, hidden_gates, c)
        return h_new, c_new
    h_new, _ = torch.ops.aten._thnn_fused_gru_cell(input_gates, hidden_gates, h)
    return h_new, None


def _handwritten_applies(module: nn.Module, x: Tensor) -> bool:
    """Whether ``module`` takes its handwritten-backward path for input ``x``: switched on, on the CPU, and
    autograd recording (training; inference keeps the library RNNs, CUDA the measured autograd paths)."""
    return module.handwritten_backward and x.device.type == "cpu" and torch.is_grad_enabled()


def _top_layer(rnn_state: Any) -> Tensor:
    """(B, H): the top layer's hidden state (h for LSTM)."""
    h = rnn_state[0] if isinstance(rnn_state, tuple) else rnn_state
    return h[-1]


def _rnn(kind: str, input_size: int, hidden: int, layers: int, dropout: float, bidirectional: bool = False):
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(input_size, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional,
               dropout=dropout if layers > 1 else 0.0)


class Encoder(nn.Module):
    """Embeddings + (bi)RNN over the padded source; padding is packed away.

    Training on a CPU, the RNN runs through :mod:`attnkit.models.rnn_recurrence` (same parameters, same
    function, one autograd node per layer with a hand-derived backward). ``handwritten_backward = False``
    keeps ``nn.GRU``/``nn.LSTM`` over the packed batch, which CUDA (cuDNN) and inference always use.
    """

    handwritten_backward = True

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = Dropout(cfg.dropout)
        self.rnn = _rnn(cfg.rnn, cfg.embedding_dim, cfg.encoder_hidden, cfg.encoder_layers, cfg.dropout,
                        cfg.bidirectional)
        self.directions = 2 if cfg.bidirectional else 1

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S), src_lengths (B,) -> states (B, S, Dk), final (B, Dk).

        ``final`` joins the last layer's final forward and backward states.
        """
        emb = self.dropout(self.embed(src))  # (B, S, E)
        if _handwritten_applies(self, emb):
            return self._forward_layers(emb, src_lengths)
        packed = pack_padded_sequence(emb, src_lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, hidden = self.rnn(packed)
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))  # (B, S, Dk)
        h = hidden[0] if isinstance(hidden, tuple) else hidden  # (layers * dirs, B, He)
        final = torch.cat([h[-self.directions + i] for i in range(self.directions)], dim=-1)  # (B, Dk)
        return self.dropout(states), final

    def _forward_layers(self, emb: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """The same as the packed RNN, layer by layer through :func:`rnn_layer`: emb (B, S, E) ->
        states (B, S, Dk), final (B, Dk)."""
        steps = emb.size(1)
        lengths = src_lengths.to(emb.device)
        valid = (torch.arange(steps, device=emb.device).unsqueeze(1) < lengths).to(emb.dtype)  # (S, B)
        reverse = reversal_index(lengths, steps) if self.directions == 2 else None
        x = emb.transpose(0, 1)  # (S, B, E), time-major
        for layer in range(self.rnn.num_layers):
            if layer > 0:  # between layers, as nn.GRU/nn.LSTM apply their dropout
                x = dropout(x, self.rnn.dropout, self.training)
            x, final = rnn_layer(self.rnn, layer, x, valid, reverse)  # (S, B, Dk), (D, B, He)
        states = x.transpose(0, 1).contiguous()  # (B, S, Dk); contiguous, so dropout draws the packed path's mask
        return self.dropout(states), torch.cat(final.unbind(0), -1)


class Decoder(nn.Module):
    """Both decoder styles; ``style`` picks the step function.

    Public API: ``init_state(final)``, ``forward(tgt_in, state, memory)`` for
    teacher forcing and ``step(prev_tokens, state, memory)`` for decoding.

    With ``fused`` (the default) the recurrent step skips ``nn.GRU``/``nn.LSTM``:
    the embedding half of the first layer's input matmul is done for all T
    steps at once, and each step is one ``torch.gru_cell``/``lstm_cell`` call per
    layer fed only the part that depends on the previous step. The parameters
    are the RNN module's own, so both paths compute the same function (tested);
    ``fused = False`` keeps the straightforward per-step module call. On CUDA,
    whose cells take only 1-D biases, layer 0 forms its gates itself and calls
    the same fused kernels (``_cuda_cell_step``).

    Training a one-layer Bahdanau-style or input-fed Luong decoder (additive or
    dot-product scores) on a CPU goes further: the whole teacher-forced loop is one autograd
    node whose backward is derived by hand (:mod:`attnkit.models.teacher_forcing_loop`),
    so every weight gradient is one matmul over all steps and rows whose target
    has ended drop out of the batch. Without input feeding, the one RNN call
    over the target runs the same way (:mod:`attnkit.models.rnn_recurrence`).
    ``handwritten_backward = False`` keeps autograd (the paths are tested equal).
    """

    fused = True
    whole_sequence = True  # Luong without input feeding: one RNN call over the target (False: step loop)
    handwritten_backward = True  # training on a CPU: one node for the loop or the RNN call (False: autograd)

    def __init__(self, cfg: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        self.style = cfg.decoder_style
        self.rnn_kind = cfg.rnn
        self.layers = cfg.decoder_layers
        self.hidden = cfg.decoder_hidden
        self.input_feeding = cfg.input_feeding and self.style == "luong"
        memory_dim = cfg.memory_dim
        emb = cfg.embedding_dim
        self.embed = nn.Embedding(vocab_size, emb, padding_idx=PAD_ID)
        self.dropout = Dropout(cfg.dropout)
        self.bridge = nn.Linear(memory_dim, self.layers * self.hidden)
        self.attention = build_attention(cfg.attention, self.hidden, memory_dim, cfg.attention_dim, cfg.heads)
        if self.style == "bahdanau":
            rnn_input = emb + memory_dim
            self.combine = nn.Linear(self.hidden + memory_dim + emb, self.hidden)  # [s_t; c_t; y_{t-1}] -> output
        else:
            rnn_input = emb + (self.hidden if self.input_feeding else 0)
            self.combine = nn.Linear(memory_dim + self.hidden, self.hidden)  # [c_t; h_t] -> h~_t
        self.rnn = _rnn(cfg.rnn, rnn_input, self.hidden, self.layers, cfg.dropout)
        self.output = nn.Linear(self.hidden, vocab_size)

    # ---- state ---------------------------------------------------------
    def init_state(self, final: Tensor) -> DecoderState:
        """final (B, Dk) -> s_0 of every layer through the bridge."""
        b = final.size(0)
        h0 = torch.tanh(self.bridge(final)).view(b, self.layers, self.hidden).transpose(0, 1).contiguous()  # (L, B, H)
        rnn_state = (h0, torch.zeros_like(h0)) if self.rnn_kind == "lstm" else h0
        feed = final.new_zeros(b, self.hidden) if self.input_feeding else None
        return DecoderState(rnn_state, feed)

    # ---- the recurrent step ----------------------------------------------------
    def _project_inputs(self, emb: Tensor) -> Tensor:
        """emb (..., E) -> the embedding part of layer 0's input gates, biases included: (..., G*H)."""
        w = self.rnn.weight_ih_l0[:, : emb.size(-1)]  # (G*H, E), G = 3 gates (GRU) or 4 (LSTM)
        return F.linear(emb, w, self.rnn.bias_ih_l0)

    def _cell_weights(self) -> list[tuple[Tensor, Tensor, Tensor | None, Tensor]]:
        """Per layer (w_ih, w_hh, b_ih, b_hh) for the fused cells, sliced once per sequence.

        Layer 0 keeps only the columns of its non-embedding input; its b_ih is
        None because the hoisted projection carries it.
        """
        e = self.embed.embedding_dim
        out = []
        for layer in range(self.layers):
            w_ih = getattr(self.rnn, f"weight_ih_l{layer}")
            b_ih = getattr(self.rnn, f"bias_ih_l{layer}")
            if layer == 0:
                w_ih, b_ih = w_ih[:, e:], None
            out.append((w_ih, getattr(self.rnn, f"weight_hh_l{layer}"), b_ih, getattr(self.rnn, f"bias_hh_l{layer}")))
        return out

    def _recur(self, emb_t: Tensor, x_proj_t: Tensor | None, extra: Tensor | None, rnn_state: Any,
               cell_weights: list | None = None):
        """One RNN step on input [emb_t; extra] -> (top output (B, H), new state).

        ``x_proj_t`` (B, G*H) is ``_project_inputs(emb_t)`` and ``cell_weights``
        ``_cell_weights()``, when the caller computed them once for all steps.
        """
        if not self.fused:
            rnn_in = emb_t if extra is None else torch.cat([emb_t, extra], -1)
            out, rnn_state = self.rnn(rnn_in.unsqueeze(1), rnn_state)
            return out.squeeze(1), rnn_state
        if x_proj_t is None:
            x_proj_t = self._project_inputs(emb_t)
        if cell_weights is None:
            cell_weights = self._cell_weights()
        if extra is None:  # nothing depends on the previous step: zero-width input
            extra = x_proj_t.new_empty(x_proj_t.size(0), 0)
        lstm = self.rnn_kind == "lstm"
        h_all, c_all = rnn_state if lstm else (rnn_state, None)
        new_h, new_c = [], []
        for layer, (w_ih, w_hh, b_ih, b_hh) in enumerate(cell_weights):
            if layer == 0:
                inp, b_ih = extra, x_proj_t  # the hoisted projection is a per-row input bias
            else:
                inp = dropout(new_h[-1], self.rnn.dropout, self.training)  # as nn.GRU between layers
            if layer == 0 and inp.is_cuda:
                # CUDA's fused cells take only 1-D biases: add the per-row projection to the input gates here.
                h, c = _cuda_cell_step(lstm, inp, b_ih, h_all[layer], c_all[layer] if lstm else None, w_ih, w_hh, b_hh)
            elif lstm:
                h, c = torch.lstm_cell(inp, (h_all[layer], c_all[layer]), w_ih, w_hh, b_ih, b_hh)
            else:
                h, c = torch.gru_cell(inp, h_all[layer], w_ih, w_hh, b_ih, b_hh), None
            new_h.append(h)
            if lstm:
                new_c.append(c)
        h_stack = torch.stack(new_h)  # (L, B, H)
        return new_h[-1], ((h_stack, torch.stack(new_c)) if lstm else h_stack)

    # ---- one step given the embedded previous token ----------------------
    def _step(self, emb_t: Tensor, state: DecoderState, memory: Memory, x_proj_t: Tensor | None = None,
              keep_t: Tensor | None = None, cell_weights: list | None = None) -> tuple[Tensor, DecoderState, Tensor]:
        """emb_t (B, E) -> pre-output (B, H), new state, weights (B, S).

        ``keep_t`` (B, H): a dropout mask already scaled by 1/(1-p), drawn for all steps at once.
        """
        if self.style == "bahdanau":
            query = _top_layer(state.rnn)  # s_{t-1}, (B, H)
            context, weights = self.attention(query, memory.states, memory.projected, memory.mask)  # (B, Dk), (B, S)
            s_t, rnn_state = self._recur(emb_t, x_proj_t, context, state.rnn, cell_weights)  # (B, H)
            pre = torch.tanh(self.combine(torch.cat([s_t, context, emb_t], -1)))
            return self._drop(pre, keep_t), DecoderState(rnn_state), weights
        h_t, rnn_state = self._recur(emb_t, x_proj_t, state.feed, state.rnn, cell_weights)  # (B, H)
        context, weights = self.attention(h_t, memory.states, memory.projected, memory.mask)
        attn_vec = self._drop(torch.tanh(self.combine(torch.cat([context, h_t], -1))), keep_t)  # h~_t, (B, H)
        return attn_vec, DecoderState(rnn_state, attn_vec if self.input_feeding else None), weights

    def compile_step(self) -> None:
        """Replace ``_step`` on this instance by its ``torch.compile`` version (one graph for any batch and source
        length: shapes are dynamic). Teacher forcing and decoding both go through it; the weights are unchanged."""
        self._step = torch.compile(self._step, dynamic=True)
        self._compiled = True

    def _loop_spec(self) -> LoopSpec | None:
        """What the handwritten-backward loop needs to know, or None where it does not apply.

        It covers one Bahdanau-style layer or one input-fed Luong layer, attending with additive (bahdanau,
        luong-concat) or dot-product (luong-dot, luong-general, scaled-dot) scores; multi-head attention and
        stacked layers use autograd.
        """
        if not (self.handwritten_backward and self.fused and self.layers == 1) or getattr(self, "_compiled", False):
            return None
        if not (self.style == "bahdanau" or self.input_feeding):
            return None
        att = self.attention
        lstm = self.rnn_kind == "lstm"
        if isinstance(att, BahdanauAttention) or (isinstance(att, LuongAttention) and att.score == "concat"):
            return LoopSpec(lstm, additive=True)
        if isinstance(att, LuongAttention):
            return LoopSpec(lstm, additive=False)
        if isinstance(att, ScaledDotAttention):
            return LoopSpec(lstm, additive=False, scale=att.query_proj.out_features ** -0.5)
        return None

    def _forward_loop(self, spec: LoopSpec, tgt_in: Tensor, emb: Tensor, state: DecoderState,
                      memory: Memory) -> tuple[Tensor, Tensor]:
        """Teacher forcing through the handwritten-backward loop: tgt_in (B, T), emb (B, T, E) -> logits
        (B, T, V), weights (B, T, S). Positions past a target's end get the output layer's bias and zero
        weights (the loss ignores them)."""
        b, steps = emb.shape[:2]
        x_proj = self._project_inputs(emb.transpose(0, 1))  # (T, B, G*H), time-major: each step contiguous
        keep = self._dropout_masks(b, steps, emb)  # (T, B, H) or None, drawn as the step loop draws them
        ((w_rest, w_hh, _, b_hh),) = self._cell_weights()  # w_rest: W_ih's columns for h~ (Luong) or c (Bahdanau)
        h0, c0 = (state.rnn[0][0], state.rnn[1][0]) if spec.lstm else (state.rnn[0], None)
        keys, projected, mask = memory.states, memory.projected, memory.mask
        bahdanau = self.style == "bahdanau"
        emb_out = feed0 = None
        if bahdanau:  # the output layer reads [s_t; c_t; y_{t-1}]: its y part is done for all steps at once
            split = self.hidden + keys.size(-1)
            w_sc = self.combine.weight[:, :split]
            emb_out = F.linear(emb.transpose(0, 1), self.combine.weight[:, split:], self.combine.bias)  # (T, B, H)
        else:
            feed0 = state.feed  # (B, H), h~_0
        lengths = (tgt_in != PAD_ID).sum(1)  # (B,)
        order = None
        if bool((lengths[1:] > lengths[:-1]).any()):  # the loop wants the longest target first (the batcher's order)
            order = torch.argsort(lengths, descending=True, stable=True)
            lengths = lengths[order]
            x_proj, keep = x_proj[:, order], (None if keep is None else keep[:, order])
            h0, c0 = h0[order], (None if c0 is None else c0[order])
            emb_out = None if emb_out is None else emb_out[:, order]
            feed0 = None if feed0 is None else feed0[order]
            keys, projected, mask = keys[order], projected[order], mask[order]
        active = (lengths.unsqueeze(0) > torch.arange(steps, device=lengths.device).unsqueeze(1)).sum(1).tolist()
        att = self.attention
        w_q = att.query_proj.weight if hasattr(att, "query_proj") else None
        v = att.v if spec.additive else None
        if bahdanau:
            out, weights = run_bahdanau_loop(spec, x_proj, emb_out, h0, c0, keys, projected, mask, keep, w_rest, w_hh,
                                             b_hh, w_q, v, w_sc, active)
        else:
            out, weights = run_loop(spec, x_proj, h0, c0, feed0, keys, projected, mask, keep, w_rest, w_hh, b_hh,
                                    w_q, v, self.combine.weight, self.combine.bias, active)
        if order is not None:
            restore = torch.argsort(order)
            out, weights = out[:, restore], weights[:, restore]
        return self.output(out.transpose(0, 1)), weights.transpose(0, 1)

    def _rnn_over_target(self, tgt_in: Tensor, emb: Tensor, rnn_state: Any) -> Tensor:
        """The decoder RNN over the whole target from the bridged state: emb (B, T, E) -> outputs (B, T, H).

        Training on a CPU, each layer is one :func:`rnn_layer` node with a hand-derived backward; its outputs
        past a target's end are zero (the loss ignores them). Elsewhere it is one ``nn.GRU``/``nn.LSTM`` call.
        """
        if not _handwritten_applies(self, emb):
            out, _ = self.rnn(emb, rnn_state)
            return out
        h0, c0 = rnn_state if self.rnn_kind == "lstm" else (rnn_state, None)  # (L, B, H)
        valid = (tgt_in != PAD_ID).t().to(emb.dtype)  # (T, B)
        x = emb.transpose(0, 1)  # (T, B, E)
        for layer in range(self.layers):
            if layer > 0:  # between layers, as nn.GRU/nn.LSTM apply their dropout
                x = dropout(x, self.rnn.dropout, self.training)
            x, _ = rnn_layer(self.rnn, layer, x, valid, None, h0[layer: layer + 1],
                             None if c0 is None else c0[layer: layer + 1])
        return x.transpose(0, 1)

    def _drop(self, x: Tensor, keep: Tensor | None) -> Tensor:
        return self.dropout(x) if keep is None else x * keep

    def _dropout_masks(self, b: int, t: int, like: Tensor) -> Tensor | None:
        """(T, B, H) inverted-dropout masks for every step in one draw (None when dropout is off)."""
        p = self.dropout.p
        if not self.training or p == 0.0:
            return None
        return keep_mask((t, b, self.hidden), p, like)

    def step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, DecoderState, Tensor]:
        """prev_tokens (B,) -> logits (B, V), new state, weights (B, S)."""
        emb_t = self.dropout(self.embed(prev_tokens))  # (B, E)
        x_proj_t = None
        if memory.input_table is not None:
            x_proj_t = memory.input_table.index_select(0, prev_tokens)  # (B, G*H): a lookup, not a matmul
        pre, state, weights = self._step(emb_t, state, memory, x_proj_t)
        return self.output(pre), state, weights

    def input_table(self, rows: int) -> Tensor | None:
        """(V, G*H): every token's embedding through layer 0's input weights, or None where it does not pay.

        Decoding without dropout or gradients makes the projection a function of the token alone, so a
        step can look it up. It is built per decoding call (``rows`` = batch x source length, a proxy for
        the lookups to come) when the vocabulary is no larger than that, and never cached across calls:
        an in-place optimizer step (fused Adam leaves ``_version`` unchanged) cannot leave it stale.
        """
        if not self.fused or self.training or torch.is_grad_enabled():
            return None
        if self.embed.num_embeddings > rows:  # building it would cost more matmul rows than it saves
            return None
        return self._project_inputs(self.embed.weight)

    # ---- teacher forcing ---------------------------------------------------
    def forward(self, tgt_in: Tensor, state: DecoderState, memory: Memory) -> tuple[Tensor, Tensor]:
        """tgt_in (B, T) -> logits (B, T, V), weights (B, T, S)."""
        emb = self.dropout(self.embed(tgt_in))  # (B, T, E), embedded once for all steps
        if self.style == "luong" and not self.input_feeding and self.whole_sequence:
            # No step depends on the previous attention: one RNN call over T,
            # then attention for all T steps in one batched matmul.
            out = self._rnn_over_target(tgt_in, emb, state.rnn)  # (B, T, H)
            context, weights = self.attention(out, memory.states, memory.projected, memory.mask)  # (B, T, Dk), (B, T, S)
            pre = self.dropout(torch.tanh(self.combine(torch.cat([context, out], -1))))  # (B, T, H)
            return self.output(pre), weights
        spec = self._loop_spec() if _handwritten_applies(self, emb) else None
        if spec is not None:
            return self._forward_loop(spec, tgt_in, emb, state, memory)
        # Per-step inputs are unbound once: indexing [:, t] inside the loop would
        # make autograd zero-fill a full (B, T, ...) gradient for every step.
        steps = tgt_in.size(1)
        embs = emb.unbind(1)
        x_projs = keeps = [None] * steps
        cell_weights = None
        if self.fused:
            x_projs = self._project_inputs(emb).unbind(1)  # (B, G*H) each: one matmul for all steps
            keep = self._dropout_masks(tgt_in.size(0), steps, emb)  # (T, B, H) or None
            keeps = keeps if keep is None else keep.unbind(0)
            cell_weights = self._cell_weights()
        pres, all_weights = [], []
        for t in range(steps):
            pre, state, weights = self._step(embs[t], state, memory, x_projs[t], keeps[t], cell_weights)
            pres.append(pre)
            all_weights.append(weights)
        pre = torch.stack(pres, 1)  # (B, T, H)
        return self.output(pre), torch.stack(all_weights, 1)  # output layer once for all steps


class Seq2Seq(nn.Module):
    """Encoder + attention decoder.  ``forward`` is teacher-forced; decoding uses ``encode``/``decoder.step``."""

    family = "seq2seq"

    def __init__(self, cfg: Seq2SeqConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg, src_vocab_size)
        self.decoder = Decoder(cfg, tgt_vocab_size)

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, DecoderState]:
        """src (B, S) -> the attention memory and the decoder's initial state."""
        states, final = self.encoder(src, src_lengths)
        mask = src != PAD_ID  # (B, S), True = may attend
        table = self.decoder.input_table(src.numel())
        memory = Memory(states, self.decoder.attention.project_keys(states), mask, table)  # keys projected once
        return memory, self.decoder.init_state(final)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S), tgt_in (B, T) -> logits (B, T, V), attention weights (B, T, S)."""
        memory, state = self.encode(src, src_lengths)
        return self.decoder(tgt_in, state, memory)
