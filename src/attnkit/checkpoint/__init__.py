"""Checkpoint directories: safetensors for tensors, JSON/YAML for everything else.

Layout of a checkpoint directory::

    meta.json            {"format": "attnkit-checkpoint", "version": 1, "family": ...}
    model.safetensors    the model's parameters and buffers
    config.yaml          the resolved experiment config
    trainer.json         {"state": the run's counters (epoch, step, best, history, ...), and in
                         last: "optimizer" (seq2seq also "scheduler")}: attnkit.training.state
    trainer.safetensors  optimizer moments and RNG states (only in last, which --resume reads)
    ...                  family-specific files (vocabularies, tokenizer models)

A directory is written next to its final place (``.NAME.tmp-*``) and swapped
into it atomically where the OS can (Linux ``renameat2(RENAME_EXCHANGE)``,
macOS ``renamex_np(RENAME_SWAP)``), so there is never a moment without a
complete checkpoint at NAME. Elsewhere the old one is moved aside
(``.NAME.old-*``) first; :func:`recover_interrupted`, which trainers run at
start, puts a complete checkpoint back if a crash fell between the two
renames, and removes leftover temporaries. A save that fails (a full disk, a
read-only directory) keeps the previous checkpoint and raises a
:class:`CheckpointError`. Loading reads tensors with safetensors and text with json/yaml:
nothing is ever unpickled (weights go into a model through :mod:`attnkit.checkpoint.weights`).

Files and directories get the modes the user's umask gives any other file (0644 and 0755 under
umask 022), so a teammate can read a shared run; the temporaries are made with
:func:`make_temp_dir` and :func:`open_temp_file`, not ``mkdtemp``/``mkstemp`` (whose 0700 and
0600 would stay with the checkpoint after the rename).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import re
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from attnkit.config import MAX_YAML_BYTES, parse_yaml, read_text_bounded
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.size_caps import check_sizes

FORMAT = "attnkit-checkpoint"
VERSION = 1
#: the most bytes of a checkpoint's JSON file (vocabularies are the largest: a few megabytes)
MAX_JSON_BYTES = 256 * 1024 * 1024


def write_checkpoint(
    directory: str | Path,
    family: str,
    model_state: dict[str, torch.Tensor],
    config: dict,
    trainer_state: dict | None = None,
    trainer_tensors: dict[str, torch.Tensor] | None = None,
    extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write a checkpoint atomically; ``extra(tmpdir)`` adds family-specific files.

    An OSError (or a safetensors write error) keeps any previous checkpoint at ``directory`` and
    becomes a one-line :class:`CheckpointError` naming it.
    """
    directory = Path(directory)
    check_finite(model_state, f"{directory}: not written")
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = make_temp_dir(directory.parent, f".{directory.name}.tmp-")
    except OSError as exc:
        raise _save_error(directory, exc) from None
    try:
        tensors = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": FORMAT})
        (tmp / "config.yaml").write_text(
            yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        (tmp / "trainer.json").write_text(
            json.dumps(trainer_state or {}, indent=1), encoding="utf-8"
        )
        if trainer_tensors:
            save_file(
                {k: v.detach().contiguous().cpu() for k, v in trainer_tensors.items()},
                str(tmp / "trainer.safetensors"),
            )
        if extra is not None:
            extra(tmp)
        # meta.json last: its presence marks a complete checkpoint
        (tmp / "meta.json").write_text(
            json.dumps({"format": FORMAT, "version": VERSION, "family": family}), encoding="utf-8"
        )
        _follow_umask(tmp)
        _sync_tree(tmp)  # on disk before it replaces anything: a power cut cannot leave it empty
        _swap_in(tmp, directory)
        _sync_directory(directory.parent)
    except (OSError, SafetensorError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _save_error(directory, exc) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def make_temp_dir(parent: str | Path, prefix: str) -> Path:
    """A new, empty directory ``parent/prefix<random>`` with the mode the umask gives (mkdir's
    0777 less the umask; ``tempfile.mkdtemp`` would make it 0700)."""
    for _ in range(100):
        path = Path(parent) / f"{prefix}{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(parent))


def open_temp_file(parent: str | Path, prefix: str, suffix: str = "") -> tuple[int, Path]:
    """(descriptor open for writing, path) of a new file ``parent/prefix<random>suffix`` with the
    mode the umask gives (0666 less the umask; ``tempfile.mkstemp`` would make it 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = Path(parent) / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(parent))


def _follow_umask(tmp: Path) -> None:
    """Give every file under ``tmp`` the mode the umask gives a new file.

    safetensors creates its files 0600 whatever the umask; ``tmp`` was made with mkdir's 0777
    less the umask (:func:`make_temp_dir`), so its mode without the execute bits is a file's.
    """
    mode = stat.S_IMODE(tmp.stat().st_mode) & 0o666
    for path in tmp.rglob("*"):
        if path.is_file() and not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)


def _sync_tree(tmp: Path) -> None:
    """fsync every file written under ``tmp``, then ``tmp`` itself."""
    for path in sorted(tmp.rglob("*")):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    _sync_directory(tmp)


def _sync_directory(path: Path) -> None:
    """fsync a directory so the names in it (a rename) are durable; a no-op where the OS cannot
    open directories (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on directories; the data files are already synced
    finally:
        os.close(fd)


def _save_error(directory: Path, exc: Exception) -> CheckpointError:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    kept = " (the previous one is kept)" if (directory / "meta.json").is_file() else ""
    return CheckpointError(f"{directory}: could not save the checkpoint: {reason}{kept}")


def _swap_in(new: Path, directory: Path) -> None:
    """Move the complete checkpoint ``new`` to ``directory``, replacing any checkpoint there."""
    if not os.path.lexists(directory):
        os.replace(new, directory)
        return
    if _exchange(new, directory):  # ``new`` now holds the previous checkpoint
        shutil.rmtree(new, ignore_errors=True)
        return
    # no atomic swap here: a crash between these renames is repaired by recover_interrupted()
    old = directory.with_name(f".{directory.name}.old-{os.getpid()}-{time.monotonic_ns()}")
    os.replace(directory, old)
    try:
        os.replace(new, directory)
    except BaseException:
        os.replace(old, directory)  # put the previous checkpoint back where it was
        raise
    shutil.rmtree(old, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def _swap_function() -> Callable[[bytes, bytes], int] | None:
    """The C call that swaps two paths atomically, or None where libc has none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):  # glibc >= 2.28
        call = libc.renameat2
        call.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        at_fdcwd, rename_exchange = -100, 2
        return lambda a, b: call(at_fdcwd, a, at_fdcwd, b, rename_exchange)
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        call = libc.renamex_np
        call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        rename_swap = 2
        return lambda a, b: call(a, b, rename_swap)
    return None


def _exchange_available() -> bool:
    return _swap_function() is not None


def _exchange(a: Path, b: Path) -> bool:
    """Swap the existing paths ``a`` and ``b`` atomically; False where the OS or the file system
    cannot."""
    call = _swap_function()
    if call is None:
        return False
    if call(os.fsencode(a), os.fsencode(b)) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


# .NAME.tmp-*: a new checkpoint being written; .NAME.old-*: one moved aside; .NAME.xxxxxxxx: either,
# as earlier versions named them
_TEMPORARY = re.compile(r"^\.(?P<name>[^/]+?)\.(?:(?P<kind>tmp|old)-)?[\w.-]+$")


def recover_interrupted(parent: str | Path, names: str) -> list[str]:
    """Repair what a crash in the middle of saving left in ``parent``; run it with the run locked.

    ``names`` is a regular expression of the checkpoint names to look after (e.g. ``last|best``).
    A checkpoint missing from its place is restored from its newest complete temporary (the new
    one of an interrupted replacement before the old one); every other temporary is removed.
    Returns one message per restored checkpoint.
    """
    parent = Path(parent)
    if not parent.is_dir():
        return []
    groups: dict[str, list[tuple[str | None, Path]]] = {}
    for entry in parent.iterdir():
        found = _TEMPORARY.match(entry.name)
        if (
            found
            and re.fullmatch(names, found["name"])
            and entry.is_dir()
            and not entry.is_symlink()
        ):
            groups.setdefault(found["name"], []).append((found["kind"], entry))
    messages = []
    for name, entries in sorted(groups.items()):
        target = parent / name
        complete = [
            (kind != "old", (path / "meta.json").stat().st_mtime, path)
            for kind, path in entries
            if (path / "meta.json").is_file()
        ]
        if not os.path.lexists(target) and complete:
            chosen = max(complete)[2]
            os.replace(chosen, target)
            messages.append(f"{target}: restored from {chosen.name}, left by an interrupted save")
        for _, path in entries:
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
    return messages


def checkpoint_dir(model_dir: str | Path) -> Path:
    """A checkpoint directory itself, or the run directory holding ``best/``."""
    model_dir = Path(model_dir)
    if not (model_dir / "meta.json").is_file() and (model_dir / "best" / "meta.json").is_file():
        return model_dir / "best"
    return model_dir


def read_meta(directory: str | Path, family: str | None = None) -> dict:
    """Check that ``directory`` is an attnkit checkpoint (of ``family``) and return its meta."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: no such checkpoint directory")
    meta_path = directory / "meta.json"
    if not meta_path.is_file():
        raise CheckpointError(f"{directory}: not an attnkit checkpoint (meta.json is missing)")
    try:
        meta = json.loads(read_text_bounded(meta_path, 64 * 1024, CheckpointError))
    except (RecursionError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{meta_path}: unreadable ({_first_line(exc)})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{meta_path}: not an attnkit checkpoint (format is "
            f"{meta.get('format') if isinstance(meta, dict) else meta!r})"
        )
    if meta.get("version") != VERSION:
        raise CheckpointError(
            f"{meta_path}: checkpoint version {meta.get('version')!r}, this attnkit reads {VERSION}"
        )
    if not isinstance(meta.get("family"), str):  # every reader dispatches on it
        raise CheckpointError(
            f"{meta_path}: no 'family' key (seq2seq or vision): not a complete checkpoint"
        )
    if family is not None and meta.get("family") != family:
        raise CheckpointError(
            f"{directory}: a {meta.get('family')!r} checkpoint, expected {family!r}"
        )
    return meta


def check_regular(path: str | Path) -> None:
    """CheckpointError when ``path`` exists but is no regular file: a FIFO would block ``open``
    for ever, a device never ends (``os.stat`` itself neither opens nor blocks)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing: the caller says so
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        raise CheckpointError(f"{path}: is {kind}, not a regular file (not read)")


def read_tensors(path: str | Path, required: bool = True) -> dict[str, torch.Tensor] | None:
    path = Path(path)
    check_regular(path)
    if not path.is_file():
        if required:
            raise CheckpointError(f"{path}: missing from the checkpoint")
        return None
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: corrupt safetensors file ({exc})") from None


def read_json(path: str | Path, required: bool = True) -> Any:
    path = Path(path)
    check_regular(path)
    if not path.is_file():
        if required:
            raise CheckpointError(f"{path}: missing from the checkpoint")
        return None
    try:
        return json.loads(read_text_bounded(path, MAX_JSON_BYTES, CheckpointError))
    except (RecursionError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: unreadable JSON ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return " ".join(text.split())[:200]


def read_config(directory: str | Path) -> dict:
    """A checkpoint's ``config.yaml``, read with bounds (:func:`attnkit.config.parse_yaml`) and
    its sizes checked against their caps (:func:`attnkit.size_caps.check_sizes`)."""
    path = Path(directory) / "config.yaml"
    check_regular(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: missing from the checkpoint")
    try:
        data = parse_yaml(read_text_bounded(path, MAX_YAML_BYTES, CheckpointError), str(path))
    except AttnkitError as exc:  # a bounded YAML read: aliases, depth, duplicate keys, size
        raise CheckpointError(str(exc)) from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a config mapping")

    check_sizes(data, str(path))
    return data


def check_model_tensors(
    state: dict[str, torch.Tensor], own: dict[str, torch.Tensor], where: str
) -> None:
    """Each saved tensor has the shape and dtype of the model's own, and floating ones are finite.

    ``load_state_dict`` would cast an int64 or float64 tensor silently, and NaN
    weights decode as ``<unk><unk>...``: a checkpoint like that is refused.
    """
    for key, tensor in state.items():
        if tensor.shape != own[key].shape:
            raise CheckpointError(
                f"{where}: {key} has shape {tuple(tensor.shape)}, "
                f"the model expects {tuple(own[key].shape)}"
            )
        if tensor.dtype != own[key].dtype:
            saved, expected = (str(t.dtype).removeprefix("torch.") for t in (tensor, own[key]))
            raise CheckpointError(f"{where}: {key} has dtype {saved}, the model expects {expected}")
    check_finite(state, where)


def check_finite(state: dict[str, torch.Tensor], where: str) -> None:
    """CheckpointError naming the first floating tensor of ``state`` that holds NaN or inf."""
    for key, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: {key} holds NaN or infinite values")


def average_tensors(states: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts with the same keys and shapes (checkpoint averaging).

    Floating tensors are averaged in float64 and cast back to their dtype;
    other tensors (integer counters) are taken from the last state.
    """
    if not states:
        raise ValueError("nothing to average")
    keys = set(states[0])
    for i, state in enumerate(states[1:], start=2):
        if set(state) != keys:
            raise CheckpointError(
                f"state {i} has other parameter names than state 1; cannot average them"
            )
    out = {}
    for key, first in states[0].items():
        if any(s[key].shape != first.shape for s in states):
            raise CheckpointError(
                f"{key}: shapes differ between the checkpoints; cannot average them"
            )
        if first.is_floating_point():
            out[key] = (sum(s[key].double() for s in states) / len(states)).to(first.dtype)
        else:
            out[key] = states[-1][key].clone()
    return out
