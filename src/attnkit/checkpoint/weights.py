"""A checkpoint's weights into a model: ``model.safetensors`` (or its shards,
:mod:`attnkit.checkpoint.shards`) read without unpickling, float16-
stored weights upcast (:mod:`attnkit.checkpoint.half`), every name, shape and dtype checked
against the model's own, and a foreign file refused in one line.

Its own module rather than the package's ``__init__``: the package's submodules import the
package, so the package imports none of them.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.checkpoint import check_model_tensors
from attnkit.checkpoint.half import upcast_half
from attnkit.checkpoint.shards import read_weights, stored_as_half_weights, weight_files
from attnkit.errors import CheckpointError


def load_model_state(model: torch.nn.Module, directory: str | Path) -> None:
    """Load ``model.safetensors`` or its shards (float16-stored: upcast) into ``model``; refuse
    a foreign one."""
    files = weight_files(directory)
    path = files[0] if len(files) == 1 else Path(directory)
    state = read_weights(directory)
    own = model.state_dict()
    state = upcast_half(state, own) if stored_as_half_weights(directory) else state
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
        if unexpected:
            detail.append(
                f"unexpected {', '.join(unexpected[:3])}{' ...' if len(unexpected) > 3 else ''}"
            )
        raise CheckpointError(f"{path}: parameters do not match this model ({'; '.join(detail)})")
    check_model_tensors(state, own, str(path))
    model.load_state_dict(state)
