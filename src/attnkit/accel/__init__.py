"""Everything that exists only for speed, behind one switch (:mod:`attnkit.accel.backend`).

* :mod:`~attnkit.accel.backend`: ``reference | fused | native | compile | auto``, resolved once;
* :mod:`~attnkit.accel.cells`: the fused recurrent step (hoisted input projection, torch's cells);
* :mod:`~attnkit.accel.loops`: teacher forcing as one autograd node with a hand-derived backward;
* :mod:`~attnkit.accel.recurrence`: a whole-sequence RNN layer with a hand-derived backward;
* :mod:`~attnkit.accel.cell_math`: the GRU/LSTM gate arithmetic those two share;
* :mod:`~attnkit.accel.native`: optional C kernels (AVX2/FMA), compiled on first use.

* :mod:`~attnkit.accel.overrides`: the faster functions (kernel scores, dropout masks) registered
  as opt-in overrides of :mod:`attnkit.attention`'s plain ones; importing this package registers
  them.

Nothing here runs outside the scope of a backend that allows it
(:meth:`~attnkit.accel.backend.Backend.scope`): the reference models compute the same functions
with plain torch.
"""

from attnkit.accel import overrides as _overrides  # noqa: F401 - registers the overrides
