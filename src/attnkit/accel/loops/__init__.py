"""Teacher forcing of a one-layer attention decoder as one autograd node with a hand-derived
backward.

Two loops: :func:`run_loop` for the input-fed Luong decoder, :func:`run_bahdanau_loop` for the
Bahdanau-style one (s_{t-1} queries, then the RNN steps on [y_{t-1}; c_t]). Step t of the Luong
decoder (GRU or LSTM):

    gates_x = x_t + h~_{t-1} W_f^T           x_t: the embedding's part of the input gates, hoisted
                                             (T, B, G*H)
    gates_h = h_{t-1} W_hh^T + b_hh
    h_t     = cell(gates_x, gates_h, h_{t-1})                 GRU or LSTM gate arithmetic
    q_t     = h_t W_q^T   (or h_t itself)                     the query
    e_t     = v . tanh(q_t + P)   or   scale * P q_t          additive or dot scores over the source
                                                              (B, S)
    a_t     = masked softmax(e_t),  c_t = a_t K               weights (B, S), context (B, Dk)
    h~_t    = tanh([c_t; h_t] W_c^T + b_c) * keep_t           the attentional vector, dropout mask
                                                              keep_t

Autograd over that loop records dozens of small nodes per step, accumulates every weight gradient
step by step, and zero-fills views. Here the forward loop keeps what the backward needs in (T, ...)
buffers, and the backward loop does only what the recurrence forces to be sequential: the gradients
with respect to the step's inputs. Every weight gradient is then one matmul over all T*B rows (e.g.
dW_hh = dG_h^T [h_0..h_{T-1}]), and the key and value gradients one batched matmul over T. The
arithmetic is the same as the step loop's, so the two paths agree to float rounding (tested against
it, gradients included). On float32 CPU tensors the GRU gate arithmetic and the additive energies,
forward and backward, run in the compiled kernels of :mod:`attnkit.accel.native` (the same
arithmetic with a rational tanh, agreeing to about 1e-6).

Rows whose target has ended are not computed: with the batch sorted longest target first (the
batcher's order), step t works on the first ``active[t]`` rows only. Their outputs and weights are
zero past the end, where the step loop computes values that the loss then ignores.

Shapes: T target steps, B batch, S source length, H decoder hidden, G gates (3 GRU, 4 LSTM), Dk
memory width, A attention width.

Modules: :mod:`.spec` what a loop computes and the dataclasses of its tensors and weights;
:mod:`.teacher_forcing` the entry point from a decoder (:func:`teacher_force`); :mod:`.functions`
the two loops as autograd Functions; :mod:`.forward` and :mod:`.backward` the steps they share and
their buffers.
"""

from attnkit.accel.loops.functions import run_bahdanau_loop, run_loop
from attnkit.accel.loops.spec import LoopInputs, LoopSpec, LoopWeights
from attnkit.accel.loops.teacher_forcing import teacher_force

__all__ = [
    "LoopInputs",
    "LoopSpec",
    "LoopWeights",
    "run_bahdanau_loop",
    "run_loop",
    "teacher_force",
]
