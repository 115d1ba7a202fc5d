"""Everything that exists only for speed, behind one switch (:mod:`attnkit.accel.backend`).

* :mod:`~attnkit.accel.backend`: ``reference | fused | native | compile | auto``, resolved once;
* :mod:`~attnkit.accel.cells`: the fused recurrent step (hoisted input projection, torch's cells);
* :mod:`~attnkit.accel.loops`: teacher forcing as one autograd node with a hand-derived backward;
* :mod:`~attnkit.accel.recurrence`: a whole-sequence RNN layer with a hand-derived backward;
* :mod:`~attnkit.accel.cell_math`: the GRU/LSTM gate arithmetic those two share;
* :mod:`~attnkit.accel.native`: optional C kernels (AVX2/FMA), compiled on first use.

The reference model (:mod:`attnkit.models.seq2seq`) computes the same function without any of it.
"""
