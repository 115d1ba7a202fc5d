"""Reading the Planetoid pickles without letting them run code.

A pickle names the callables that rebuild its objects, and ``pickle.load`` calls whatever they
name: a crafted file runs any function it likes. :class:`SafeUnpickler` resolves only the names
of :data:`ALLOWED` (numpy arrays and dtypes, scipy sparse matrices, ``list``, ``dict``,
``defaultdict``) and refuses any other name before anything is called, with a one-line
:class:`~attnkit.errors.DataError` naming the file and the global it asked for.

scipy is not needed: a pickled sparse matrix is rebuilt as a :class:`SparseMatrix`, a plain
holder of the arrays its ``__setstate__`` is given (``data``, ``indices``, ``indptr``,
``_shape``), which :meth:`SparseMatrix.toarray` turns into a dense array.
"""

from __future__ import annotations

import collections
import io
import pickle
from pathlib import Path

import numpy as np

from attnkit.data.bounded import read_regular_bytes
from attnkit.errors import DataError

MAX_BYTES = 512 * 1024 * 1024  # the largest pickle read (Pubmed's allx is about 40 MB)


class SparseMatrix:
    """A pickled ``scipy.sparse`` CSR/CSC matrix's arrays, without scipy."""

    def __setstate__(self, state: dict) -> None:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("a sparse matrix whose state is not a mapping")
        self.state = state

    def declared_shape(self):
        """The ``_shape`` its state declares (unchecked: the reader checks it before
        :meth:`toarray` allocates it)."""
        return (getattr(self, "state", None) or {}).get("_shape")

    def toarray(self) -> np.ndarray:
        """The dense ``(rows, cols)`` float32 array; ValueError for arrays that do not describe
        a matrix of the declared shape (``indptr`` not rising from 0 to the number of entries,
        an index outside the shape)."""
        state = getattr(self, "state", None) or {}
        fmt = state.get("format", "csr")
        shape, data = state.get("_shape"), state.get("data")
        indices, indptr = state.get("indices"), state.get("indptr")
        if fmt not in ("csr", "csc") or shape is None or data is None or indptr is None:
            raise ValueError(f"a sparse matrix of format {fmt!r} without its arrays")
        rows, cols = (int(shape[0]), int(shape[1]))
        major, minor = (rows, cols) if fmt == "csr" else (cols, rows)
        indptr, indices = np.asarray(indptr, np.int64), np.asarray(indices, np.int64)
        data = np.asarray(data, np.float32)
        if indptr.shape != (major + 1,) or indices.shape != data.shape or data.ndim != 1:
            raise ValueError("a sparse matrix whose arrays do not fit its shape")
        steps = np.diff(indptr)
        if indptr[0] != 0 or indptr[-1] != len(indices) or (steps < 0).any():
            raise ValueError("a sparse matrix whose indptr does not count its entries")
        if len(indices) and (indices.min() < 0 or indices.max() >= minor):
            raise ValueError("a sparse matrix with an index outside its shape")
        out = np.zeros((rows, cols), np.float32)
        lines = np.repeat(np.arange(major), steps)
        if fmt == "csr":
            out[lines, indices] = data
        else:
            out[indices, lines] = data
        return out


def _numpy_reconstruct():
    core = getattr(np, "_core", None)
    if core is None:  # numpy < 2
        import numpy.core.multiarray as multiarray
    else:
        multiarray = core.multiarray
    return multiarray._reconstruct


#: (module, name) a pickle may ask for -> what it gets (a callable that returns it)
ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _numpy_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _numpy_reconstruct,
    ("numpy", "ndarray"): lambda: np.ndarray,
    ("numpy", "dtype"): lambda: np.dtype,
    ("scipy.sparse.csr", "csr_matrix"): lambda: SparseMatrix,
    ("scipy.sparse._csr", "csr_matrix"): lambda: SparseMatrix,
    ("scipy.sparse.csc", "csc_matrix"): lambda: SparseMatrix,
    ("scipy.sparse._csc", "csc_matrix"): lambda: SparseMatrix,
    ("__builtin__", "list"): lambda: list,
    ("builtins", "list"): lambda: list,
    ("__builtin__", "dict"): lambda: dict,
    ("builtins", "dict"): lambda: dict,
    ("collections", "defaultdict"): lambda: collections.defaultdict,
}


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that resolves only :data:`ALLOWED` names (and no persistent ids)."""

    def find_class(self, module: str, name: str):
        made = ALLOWED.get((module, name))
        if made is None:
            raise pickle.UnpicklingError(
                f"refused global {module}.{name} (allowed: numpy arrays, scipy sparse matrices, "
                "list, dict, defaultdict)"
            )
        return made()

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused a persistent id")


def load_pickle(path: str | Path):
    """The object pickled in ``path`` (Python 2 pickles too: ``latin1``), read with
    :class:`SafeUnpickler`; a DataError naming ``path`` for a refused global, a file too large or
    a pickle that is not one."""
    path = Path(path)
    data = read_regular_bytes(path, MAX_BYTES)  # a regular file within the cap: no FIFO, device
    try:
        return SafeUnpickler(io.BytesIO(data), encoding="latin1").load()
    except pickle.UnpicklingError as exc:
        raise DataError(f"not read: {exc}", path=path) from None
    except (
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        MemoryError,
        OverflowError,
        RecursionError,
    ) as exc:
        raise DataError(f"not a readable pickle ({type(exc).__name__}: {exc})", path=path) from None
