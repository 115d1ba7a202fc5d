"""GRU and LSTM gate arithmetic, forward and hand-derived backward, for the handwritten-backward
recurrences.

The matmuls stay with the callers (they batch the weight gradients over all steps); these functions
do the elementwise part of one step, writing into the callers' buffers. Gate order and equations are
nn.GRU's and nn.LSTM's:

    GRU:  r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z);  n = tanh(x_n + r * h_n);
          h' = (1 - z) n + z h
    LSTM: i, f, o = sigmoid(...), g = tanh(...);  c' = f c + i g;  h' = o tanh(c')

where x = the input gates (b_ih inside) and h = h_prev W_hh^T + b_hh. Shapes (..., G*H) for gates
and (..., H) for states: any leading dims (the encoder steps both directions at once).

A GRU's arithmetic can instead run as one compiled kernel per step (``native_gru=True``, see
:mod:`attnkit.accel.native`): the callers decide once per loop with :func:`native_gru_applies`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.accel import native


def gate_count(lstm: bool) -> int:
    return 4 if lstm else 3


def add_hidden_matmul(direct: Tensor | None, d_gates_h: Tensor, w_hh: Tensor) -> Tensor:
    """d h_prev = the elementwise part (or nothing) + d_gates_h W_hh; batched over a leading
    direction dim when ``w_hh`` is (D, G*H, H)."""
    if w_hh.dim() == 3:
        return (
            torch.bmm(d_gates_h, w_hh) if direct is None else torch.baddbmm(direct, d_gates_h, w_hh)
        )
    return torch.mm(d_gates_h, w_hh) if direct is None else torch.addmm(direct, d_gates_h, w_hh)


def tanh_grad(grad: Tensor, tanh_out: Tensor, out: Tensor) -> Tensor:
    """out = grad * (1 - tanh_out^2), one kernel."""
    return torch.ops.aten.tanh_backward.grad_input(grad, tanh_out, grad_input=out)


def sigmoid_grad(grad: Tensor, sigmoid_out: Tensor, out: Tensor) -> Tensor:
    """out = grad * s (1 - s), one kernel."""
    return torch.ops.aten.sigmoid_backward.grad_input(grad, sigmoid_out, grad_input=out)


def native_gru_applies(lstm: bool, *tensors: Tensor) -> bool:
    """Whether a loop over these tensors (its inputs, or buffers of the same kind) may run its GRU
    steps through the compiled kernel: a GRU, on (B, X) or (D, B, X) float32 CPU rows, with the
    kernels built."""
    return not lstm and native.fits_rows(*tensors)


def cell_forward(
    lstm: bool,
    gates_x: Tensor,
    gates_h: Tensor,
    h_prev: Tensor,
    c_prev: Tensor | None,
    gates: Tensor,
    extra: Tensor,
    h_out: Tensor,
    c_out: Tensor | None,
    native_gru: bool = False,
    hidden_bias: Tensor | None = None,
) -> None:
    """One step. Writes the activated gates (..., G*H), the new h into ``h_out`` and, for an LSTM,
    the new c into ``c_out`` and tanh(c') into ``extra`` (..., H). A GRU needs no ``extra``
    (pass None): its backward reads h_n from ``gates_h``, which the caller keeps. ``native_gru``:
    the compiled kernel computes a GRU step (the caller has checked :func:`native_gru_applies`;
    every row contiguous); then ``hidden_bias`` (G*H,) or (D, G*H), when given, is b_hh, which
    ``gates_h`` comes without and which the kernel adds into it."""
    if native_gru:
        native.run_gru_forward(gates_x, gates_h, h_prev, gates, h_out, hidden_bias)
        return
    if hidden_bias is not None:
        raise ValueError(
            "hidden_bias is for the native GRU kernel; torch's path takes b_hh inside gates_h"
        )
    hidden = h_out.size(-1)
    if lstm:
        torch.add(gates_x, gates_h, out=gates)
        gates[..., : 2 * hidden].sigmoid_()  # i, f
        gates[..., 2 * hidden : 3 * hidden].tanh_()  # g
        gates[..., 3 * hidden :].sigmoid_()  # o
        i, f, g, o = gates.chunk(4, -1)
        torch.addcmul(f * c_prev, i, g, out=c_out)
        torch.tanh(c_out, out=extra)
        torch.mul(o, extra, out=h_out)
        return
    torch.add(
        gates_x[..., : 2 * hidden], gates_h[..., : 2 * hidden], out=gates[..., : 2 * hidden]
    ).sigmoid_()
    r, z, n = gates.chunk(3, -1)
    torch.addcmul(gates_x[..., 2 * hidden :], r, gates_h[..., 2 * hidden :], out=n).tanh_()
    torch.addcmul(n, z, h_prev - n, out=h_out)  # (1 - z) n + z h


def cell_backward(
    lstm: bool,
    d_h: Tensor,
    d_c: Tensor | None,
    gates: Tensor,
    extra: Tensor,
    h_prev: Tensor,
    c_prev: Tensor | None,
    d_gates_x: Tensor,
    d_gates_h: Tensor,
    native_gru: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Backward of one step given d_h (and d_c, LSTM) with respect to the new state.

    ``extra``: tanh(c') for an LSTM, the hidden gates (..., G*H) of the step for a GRU. Writes the
    gradients of the input gates into ``d_gates_x`` and of the hidden gates into ``d_gates_h`` (pass
    the same tensor for an LSTM, whose two are equal). Returns the elementwise part of d h_prev
    (GRU: d_h * z; LSTM: None, it has none; the caller adds ``d_gates_h @ W_hh``) and, for an LSTM,
    d c_prev. ``native_gru`` as in :func:`cell_forward`.
    """
    if native_gru:
        direct = torch.empty_like(d_h)
        native.run_gru_backward(d_h, gates, extra, h_prev, d_gates_x, d_gates_h, direct)
        return direct, None
    if lstm:
        i, f, g, o = gates.chunk(4, -1)
        d_c = d_c + tanh_grad(d_h * o, extra, torch.empty_like(d_h))
        di, df, dg, do = d_gates_x.chunk(4, -1)
        sigmoid_grad(d_c * g, i, di)
        sigmoid_grad(d_c * c_prev, f, df)
        tanh_grad(d_c * i, g, dg)
        sigmoid_grad(d_h * extra, o, do)
        return None, d_c * f
    hidden = d_h.size(-1)
    r, z, n = gates.chunk(3, -1)
    dr, dz, dn = d_gates_x.chunk(3, -1)
    d_h_z = (
        d_h * z
    )  # the part that reaches h_prev directly, and d_h (1 - z) = d_h - d_h_z reaches n
    tanh_grad(d_h - d_h_z, n, dn)
    sigmoid_grad(dn * extra[..., 2 * hidden :], r, dr)
    sigmoid_grad(d_h * (h_prev - n), z, dz)
    d_gates_h[..., : 2 * hidden] = d_gates_x[..., : 2 * hidden]
    torch.mul(dn, r, out=d_gates_h[..., 2 * hidden :])
    return d_h_z, None
