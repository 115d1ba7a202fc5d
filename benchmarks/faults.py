#!/usr/bin/env python3
"""Bad inputs and faults through the real CLI; prints ONE JSON line: cases, held, failed.

    python benchmarks/faults.py                 # the whole matrix (a few minutes on 2 cores)
    python benchmarks/faults.py --list          # names and issue items, nothing run
    python benchmarks/faults.py --only resume_  # the cases whose name contains "resume_"
    python benchmarks/faults.py --item 6        # the cases of item 6 of the issue
    python benchmarks/faults.py --keep --jobs 1 # keep the temporary directory; one case at a time
    python benchmarks/faults.py --no-fork       # a fresh interpreter for every command

Every case runs ``attnkit ...`` commands in its own folder of one temporary directory, with
this tree's ``src/`` first on PYTHONPATH (so it tests the tree it sits in), one thread, no
progress bars. Each command is a process of its own, forked from one process that imported
torch and attnkit once (benchmarks/faults_zygote.py: a case pays for its own work, not for 3-4
CPU seconds of imports); a command run with another environment, or as another user, starts a
fresh ``python -m attnkit`` instead. Every command is bounded by CPU seconds of its process
group (``--timeout``) and given up on once it gains no CPU for 30 s of wall time (blocked):
not by wall time, which on a shared machine measures the load. A tiny parallel-text model is
trained once, on first need, and copied by the cases that damage checkpoints. A case *holds*
when the outcome is the expected one: for bad input, exit status 2 and exactly one line on
stderr, starting with ``attnkit: error:`` (``attnkit: warning:`` lines aside; never a
traceback), and nothing lost (an existing checkpoint is byte for byte unchanged, no file
written where it must not be);
for faults (SIGTERM, SIGINT, kill -9, NaN losses, a planted kernel library) the checkpoint
survives, finite and resumable, and nothing planted runs. ``item`` is the item of the issue
"Trustworthy results" that a case checks ("held" for what held before it, "fuzz" for what
the property tests found and this tree fixed), or ``bN``: item N of the issue "Bounded against
hostile input" (benchmarks/faults_bounded.py), whose memory cases run under an address-space
cap and fail above 1 GB of peak RSS or 10 s of CPU.

Progress goes to stderr; stdout gets {"cases", "held", "failed", "failed_cases": [{"name",
"item", "why"}], "skipped": [{"name", "why"}], "seconds"}. Cases that cannot run here (no C
compiler, no AVX2, a check that root bypasses) are skipped and named, not counted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"

TINY_MODEL = {
    "attention": "bahdanau",
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
}
TINY_TRAIN = {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01}
#: long enough to be interrupted: ~3,200 number pairs, a 25 s epoch budget on a busy CPU
LONG_DATA = {"task": "numbers", "languages": ["en", "de", "fr", "es"], "max_number": 999}
LONG_TRAIN = {
    "epochs": 50,
    "batch_size": 16,
    "threads": 1,
    "progress": False,
    "lr": 0.01,
    "max_minutes": 0.4,
    "verbose": False,  # stderr holds what the cases check (an interruption's line), no progress
}
#: the time budget of a run the case interrupts (the signal ends it within seconds): a budget
#: the machine's load could spend before the signal comes would end the run unasked
INTERRUPTED_MINUTES = 5
XSS = "<script>alert(1)</script>"


class Skip(Exception):
    """The case cannot run on this machine (the reason is reported, the case not counted)."""


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    seconds: float

    def lines(self) -> list[str]:
        """Non-blank stderr lines, warnings and a resumed run's notices of what it changes
        (``resume: train.epochs 2 -> 4``, said before anything is checked) aside."""
        return [
            ln
            for ln in self.stderr.splitlines()
            if ln.strip() and not ln.startswith(("attnkit: warning:", "resume: "))
        ]

    def tail(self) -> str:
        text = self.stderr.strip().splitlines()
        return " | ".join(text[-2:])[:300] if text else "(no stderr)"


@dataclass
class Case:
    """``run(ctx, folder)`` sets up, runs the command(s) and checks: None when held, else why."""

    name: str
    item: str
    run: Callable[[Context, Path], str | None]
    needs_model: bool = True


class Context:
    """The temporary directory, the shared data files and the tiny model (trained on first need)."""

    def __init__(self, root: Path, timeout: float, fork: bool = True):
        self.root, self.timeout = root, timeout
        self.fork = fork  # commands forked from one process that imported torch (faults_zygote)
        self._zygote = None
        self._zygote_lock = threading.Lock()
        self._lock = threading.Lock()
        self.native_lock = threading.Lock()
        self.native_cache: Path | None = None  # the kernel library built once, for the cache cases
        self.native_skip: str | None = None
        self._model: Path | None = None
        self._model_error: str | None = None
        self.data = root / "shared"
        self.data.mkdir(parents=True, exist_ok=True)
        self._write_data()

    # ---- subprocesses ------------------------------------------------------
    def env(self, **extra: str) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + [p for p in [env.get("PYTHONPATH")] if p])
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONIOENCODING="utf-8", **extra)
        shared = REPO.parent / "shared" / "data"  # MNIST for the vision runs, as the tests do
        if not env.get("ATTNKIT_DATA_DIR", "").strip() and shared.is_dir():
            env["ATTNKIT_DATA_DIR"] = str(shared)
        env.pop("PYTHONWARNINGS", None)
        return env

    def command(self, args: list) -> list:
        return [sys.executable, "-m", "attnkit", *args]

    def zygote(self):
        """The process commands are forked from (started on first need), or None with
        ``--no-fork``."""
        if not self.fork:
            return None
        with self._zygote_lock:
            if self._zygote is None:
                from faults_zygote import Zygote

                self._zygote = Zygote(self.env(), self.root / "zygote.sock")
            return self._zygote

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()

    def forked(
        self,
        args: list,
        cwd: Path,
        stdin: bytes | str | None = None,
        timeout: float | None = None,
        cap: int | None = None,
        script: str | None = None,
    ) -> tuple[Result, float | None, float | None] | None:
        """(Result, peak RSS MB, CPU s) of ``attnkit args`` (or ``script``) forked from the
        zygote; None where ``--no-fork`` asks for fresh interpreters (the caller runs one)."""
        zygote = self.zygote()
        if zygote is None:
            return None
        out = zygote.run(args, cwd, stdin, timeout or self.timeout, cap, script)
        res = Result(out["rc"], out["stdout"], out["stderr"], out["seconds"])
        return res, out["rss_kb"] / 1024, out["cpu_s"]

    def attnkit(
        self,
        args: list,
        cwd: Path,
        stdin: bytes | None = None,
        env: dict | None = None,
        timeout: float | None = None,
        preexec_fn=None,
    ) -> Result:
        if env is None and preexec_fn is None:  # the harness's own environment: forked
            done = self.forked(args, cwd, stdin if stdin is not None else b"", timeout)
            if done is not None:
                return done[0]
        return self.fresh(self.command(args), cwd, stdin, env, timeout, preexec_fn)[0]

    def fresh(
        self,
        argv: list,
        cwd: Path,
        stdin: bytes | str | None = None,
        env: dict | None = None,
        timeout: float | None = None,
        preexec_fn=None,
        cap: int | None = None,
    ) -> tuple[Result, float, float]:
        """(Result, peak RSS MB, CPU s) of ``argv`` started afresh in its own process group,
        bounded as a forked command is (:class:`faults_zygote.Budget`: ``timeout`` CPU seconds
        and the stall guard); ``stdin``: bytes, a file's path or None (empty); ``cap``:
        RLIMIT_AS bytes. Peak RSS and CPU come from ``wait4`` (reaped descendants included)."""
        import resource

        from faults_zygote import Budget

        limit = timeout or self.timeout

        def setup() -> None:
            if cap:
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            if preexec_fn is not None:
                preexec_fn()

        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            if isinstance(stdin, str):
                source = open(stdin, "rb")  # noqa: SIM115 - closed below
            else:
                source = tempfile.TemporaryFile()
                source.write(stdin or b"")
                source.seek(0)
            t0 = time.time()
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    stdin=source,
                    stdout=out,
                    stderr=err,
                    env=env or self.env(),
                    start_new_session=True,  # its own group: the budget counts and kills it all
                    preexec_fn=setup if cap or preexec_fn is not None else None,
                )
            finally:
                source.close()
            budget, why = Budget(proc.pid, limit), None
            while True:
                done, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if done:
                    break
                if why := budget.exceeded():
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    _, status, usage = os.wait4(proc.pid, 0)
                    break
                time.sleep(0.01)
            proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
            out.seek(0)
            err.seek(0)
            stderr = err.read().decode("utf-8", "replace")
            stderr += f"\n(timed out: {why})" if why else ""
            res = Result(
                124 if why else proc.returncode,
                out.read().decode("utf-8", "replace"),
                stderr,
                time.time() - t0,
            )
        return res, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime

    # ---- shared files ------------------------------------------------------
    def _write_data(self) -> None:
        rng, seen = random.Random(0), set()
        for name, n in (("train", 60), ("dev", 10), ("test", 10)):
            lines = []
            while len(lines) < n:
                s = "".join(rng.choice("abcde") for _ in range(rng.randint(1, 4)))
                if s not in seen:
                    seen.add(s)
                    lines.append(f"{s}\t{s[::-1]}\n")
            if name == "test":  # markup in the data must come out escaped in the report
                lines.append(f"{XSS}\t{XSS[::-1]}\n")
                lines.append("a&b\"c'd\t<img src=x onerror=alert(2)>\n")
            (self.data / f"{name}.tsv").write_text("".join(lines), encoding="utf-8")

    def data_section(self) -> dict:
        return {
            "task": "parallel",
            **{s: str(self.data / f"{s}.tsv") for s in ("train", "dev", "test")},
        }

    def config(self, folder: Path, name: str = "exp.yaml", drop: tuple = (), **sections) -> Path:
        """The tiny parallel experiment with ``sections`` merged in (None removes a key)."""
        import yaml

        cfg = {
            "name": "tiny",
            "data": self.data_section(),
            "model": dict(TINY_MODEL),
            "train": dict(TINY_TRAIN),
            "decode": {"beam_size": 2, "max_len_cap": 8},
        }
        for key, values in sections.items():
            if isinstance(values, dict) and isinstance(cfg.get(key), dict):
                cfg[key] = {k: v for k, v in {**cfg[key], **values}.items() if v is not None}
            else:
                cfg[key] = values
        for key in drop:
            cfg.pop(key, None)
        path = folder / name
        path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return path

    def long_config(self, folder: Path, **train) -> Path:
        """A numbers-task run long enough to be interrupted (its data section replaces the
        parallel one whole: the parallel task's file keys do not apply to it)."""
        path = self.config(folder, "long.yaml", train={**LONG_TRAIN, **train})
        import yaml

        cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
        cfg["data"] = dict(LONG_DATA)
        path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return path

    def model(self) -> Path:
        """The shared tiny run directory (best/ and last/), trained once by ``attnkit train``."""
        with self._lock:
            if self._model is None and self._model_error is None:
                folder = self.root / "model"
                folder.mkdir()
                res = self.attnkit(
                    ["train", str(self.config(folder)), "--output-dir", "run"], folder, timeout=300
                )
                if res.rc != 0 or not (folder / "run" / "best" / "meta.json").is_file():
                    self._model_error = (
                        f"the shared model did not train: exit {res.rc}: {res.tail()}"
                    )
                else:
                    self._model = folder / "run"
            if self._model is None:
                raise RuntimeError(self._model_error)
            return self._model

    def run_copy(self, folder: Path) -> Path:
        """A private copy of the shared run directory (best/, last/)."""
        dest = folder / "run"
        shutil.copytree(self.model(), dest)
        return dest

    def best_copy(self, folder: Path) -> Path:
        dest = folder / "ckpt"
        shutil.copytree(self.model() / "best", dest)
        return dest


# ---- checks ---------------------------------------------------------------------------------
def one_line_error(res: Result, *mentions: str) -> str | None:
    """Exit 2, one stderr line ``attnkit: error: ...`` naming each of ``mentions``, no traceback."""
    if "Traceback" in res.stderr:
        return f"a traceback (exit {res.rc}): {res.tail()}"
    if res.rc != 2:
        return f"exit {res.rc}, expected 2: {res.tail()}"
    lines = res.lines()
    if len(lines) != 1 or not lines[0].startswith("attnkit: error:"):
        return f"{len(lines)} stderr lines, expected one 'attnkit: error:' line: {res.tail()}"
    missing = [m for m in mentions if m.lower() not in lines[0].lower()]
    if missing:
        return f"the error does not name {', '.join(missing)}: {lines[0][:200]}"
    return None


def last_line_error(res: Result, *mentions: str) -> str | None:
    """Exit 2, no traceback, the last stderr line ``attnkit: error: ...`` naming ``mentions``
    (a training run's lines before it are its progress)."""
    if "Traceback" in res.stderr or res.rc != 2:
        return f"exit {res.rc}, expected 2 and no traceback: {res.tail()}"
    lines = res.lines()
    if not lines or not lines[-1].startswith("attnkit: error:"):
        return f"the last stderr line is no 'attnkit: error:' line: {res.tail()}"
    missing = [m for m in mentions if m.lower() not in lines[-1].lower()]
    return f"the error does not name {', '.join(missing)}: {lines[-1][:200]}" if missing else None


def succeeded(res: Result) -> str | None:
    if "Traceback" in res.stderr:
        return f"a traceback (exit {res.rc}): {res.tail()}"
    if res.rc != 0:
        return f"exit {res.rc}, expected 0: {res.tail()}"
    return None


def error_or_warning(res: Result) -> str | None:
    """A one-line error, or success with an ``attnkit: warning:`` line; never a traceback."""
    if res.rc == 0:
        if "Traceback" in res.stderr:
            return f"a traceback: {res.tail()}"
        if "attnkit: warning:" not in res.stderr:
            return "exit 0 without a warning: the input was silently changed"
        return None
    return one_line_error(res)


def digest(path: Path) -> str:
    """sha256 over every file under ``path`` (names and bytes)."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(path)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def finite_checkpoint(directory: Path) -> str | None:
    """None when ``directory/model.safetensors`` holds only finite floating tensors."""
    import numpy as np
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(directory / "model.safetensors"))
    except Exception as exc:  # noqa: BLE001 - any failure to read is the finding
        return f"{directory.name}/model.safetensors unreadable ({exc})"
    bad = [k for k, v in tensors.items() if v.dtype.kind == "f" and not np.isfinite(v).all()]
    return f"{directory.name} holds non-finite weights ({', '.join(bad[:3])})" if bad else None


def edit_tensors(path: Path, change: Callable[[dict], dict]) -> None:
    from safetensors.numpy import load_file, save_file

    save_file(change(load_file(str(path))), str(path))


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


class _Planted:
    """Unpickling this touches a marker file: proof that something was unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (Path(self.marker),)


# ---- case builders ------------------------------------------------------------------------------
CASES: list[Case] = []


def case(name: str, item: str, needs_model: bool = True):
    def register(fn):
        CASES.append(Case(name, item, fn, needs_model))
        return fn

    return register


def config_case(
    name: str,
    item: str,
    mentions: tuple = (),
    overrides: tuple = (),
    drop: tuple = (),
    raw: bytes | None = None,
    **sections,
) -> None:
    """``attnkit train`` on the tiny config with ``sections``/``overrides``, or on ``raw`` bytes."""

    def run(ctx: Context, folder: Path) -> str | None:
        if raw is not None:
            path = folder / "exp.yaml"
            path.write_bytes(raw)
        else:
            path = ctx.config(folder, drop=drop, **sections)
        args = ["train", str(path), "--output-dir", "run"]
        for item_ in overrides:
            args += ["--set", item_]
        why = one_line_error(ctx.attnkit(args, folder), *mentions)
        if why is None and (folder / "run" / "best").exists():
            return "refused, but a checkpoint was written anyway"
        return why

    CASES.append(Case(name, item, run, needs_model=False))


def cli_case(
    name: str,
    item: str,
    argv: Callable[[Context, Path], list],
    check=one_line_error,
    stdin: bytes | None = None,
    mentions: tuple = (),
    keep_intact: bool = True,
) -> None:
    """A command on a private copy of the tiny model's best checkpoint (``{ckpt}`` in argv)."""

    def run(ctx: Context, folder: Path) -> str | None:
        args = argv(ctx, folder)
        ckpt = folder / "ckpt"
        before = digest(ckpt) if ckpt.exists() else None
        res = ctx.attnkit(args, folder, stdin=stdin)
        why = check(res, *mentions) if mentions else check(res)
        if why is None and keep_intact and before is not None and digest(ckpt) != before:
            return "the checkpoint directory changed"
        return why

    CASES.append(Case(name, item, run))


def damaged_checkpoint_case(
    name: str,
    item: str,
    damage: Callable[[Path, Path], None],
    command: str = "translate",
    mentions: tuple = (),
) -> None:
    """``damage(ckpt, folder)`` on a copy of best, then a command: one line, nothing unpickled."""

    def run(ctx: Context, folder: Path) -> str | None:
        ckpt = ctx.best_copy(folder)
        damage(ckpt, folder)
        args = {
            "translate": ["translate", "--model", str(ckpt), "abc"],
            "evaluate": ["evaluate", "--model", str(ckpt), "--beam", "1", "--out", "eval"],
            "plot": ["plot", "--model", str(ckpt), "abc", "-o", "x.png"],
        }[command]
        why = one_line_error(ctx.attnkit(args, folder), *mentions)
        if (folder / "unpickled").exists():
            return "a pickle was unpickled (its marker file exists)"
        return why

    CASES.append(Case(name, item, run))


def resume_case(name: str, item: str, damage: Callable[[Path], None], mentions: tuple = ()) -> None:
    """``damage(last)`` on a copy of the run, then ``train --resume``: one line, ``last`` kept."""

    def run(ctx: Context, folder: Path) -> str | None:
        run_dir = ctx.run_copy(folder)
        damage(run_dir / "last")
        before = digest(run_dir / "last")
        args = [
            "train",
            str(ctx.config(folder)),
            "--output-dir",
            "run",
            "--resume",
            "--set",
            "train.epochs=4",
        ]
        why = one_line_error(ctx.attnkit(args, folder), *mentions)
        for sub in ("best", "last"):
            if (run_dir / sub).exists() and (bad := finite_checkpoint(run_dir / sub)):
                return bad
        if why is None and (not (run_dir / "last").exists() or digest(run_dir / "last") != before):
            return "refused, but last/ changed"
        if (folder / "unpickled").exists():
            return "a pickle was unpickled (its marker file exists)"
        return why

    CASES.append(Case(name, item, run))


# ---- 7 (and what held): the experiment file ---------------------------------------------------
config_case("config_unknown_top_level_key", "held", ("colour",), colour="blue")
config_case("config_unknown_model_key", "held", ("hidden_size",), model={"hidden_size": 3})
config_case("config_unknown_key_by_set", "held", ("bogus",), overrides=("train.bogus=1",))
config_case("config_set_without_equals", "held", overrides=("train.lr",))
config_case("config_bad_attention_choice", "held", ("attention",), model={"attention": "psychic"})
config_case("config_bad_type_epochs", "held", ("epochs",), train={"epochs": "many"})
config_case("config_epochs_zero", "held", ("epochs",), train={"epochs": 0})
config_case(
    "config_label_smoothing_above_one", "held", ("label_smoothing",), train={"label_smoothing": 1.5}
)
config_case("config_decode_beam_zero", "held", ("beam_size",), decode={"beam_size": 0})
config_case("config_max_src_len_one", "held", ("max_src_len",), overrides=("data.max_src_len=1",))
config_case(
    "config_multihead_indivisible",
    "held",
    ("heads",),
    model={"attention": "multihead", "heads": 3, "attention_dim": 8},
)
config_case("config_parallel_without_dev", "held", ("dev",), overrides=("data.dev=null",))
config_case("config_invalid_yaml", "held", ("exp.yaml",), raw=b"name: [unclosed\ndata: {\n")
config_case("config_yaml_nul_byte", "fuzz", ("exp.yaml",), raw=b"name: a\x00b\n")
config_case("config_top_level_list", "held", raw=b"- a\n- b\n")
config_case("config_not_utf8", "held", ("exp.yaml",), raw=b"name: caf\xe9\n")
config_case("config_number_keys", "fuzz", raw=b"1: a\nzz: b\n")
config_case("config_lr_negative", "7", ("lr",), train={"lr": -0.01})
config_case("config_lr_zero", "7", ("lr",), train={"lr": 0.0})
config_case("config_lr_nan", "7", ("lr",), overrides=("train.lr=.nan",))
config_case("config_batch_size_zero", "7", ("batch_size",), train={"batch_size": 0})
config_case("config_threads_negative", "7", ("threads",), train={"threads": -1})
config_case("config_max_minutes_zero", "7", ("max_minutes",), train={"max_minutes": 0})
config_case("config_max_minutes_negative", "7", ("max_minutes",), train={"max_minutes": -1})
config_case("config_clip_negative", "7", ("clip",), train={"clip": -1.0})
config_case(
    "config_no_data_section",
    "7",
    ("data",),
    drop=("data",),
    train={**TINY_TRAIN, "epochs": 1, "max_minutes": 0.1},
)
config_case(
    "config_max_number_with_dates",
    "7",
    ("max_number",),
    data={
        "task": "dates",
        "max_number": 50,
        "train_size": 200,
        "dev_size": 20,
        "test_size": 20,
        "train": None,
        "dev": None,
        "test": None,
    },
)
config_case(
    "config_heads_with_luong_dot",
    "7",
    ("heads",),
    model={"attention": "luong-dot", "heads": 2, "encoder_hidden": 8, "decoder_hidden": 16},
)
config_case(
    "config_input_feeding_with_bahdanau_decoder",
    "7",
    ("input_feeding",),
    model={"decoder": "bahdanau", "input_feeding": False},  # not the default: the user set it
)


@case("config_name_escapes_runs", "7", needs_model=False)
def _name_escape(ctx: Context, folder: Path) -> str | None:
    """``name: ../../escape`` with no output_dir must not write outside runs/."""
    cwd = folder / "a" / "b"
    cwd.mkdir(parents=True)
    path = ctx.config(cwd, name="exp.yaml")
    edit = path.read_text(encoding="utf-8").replace("name: tiny", "name: ../../escape")
    path.write_text(edit, encoding="utf-8")
    why = one_line_error(ctx.attnkit(["train", str(path)], cwd), "name")
    if (folder / "a" / "escape").exists() or (folder / "escape").exists():
        return "a run directory was written outside runs/"
    return why


# ---- data files -------------------------------------------------------------------------------
def data_case(
    name: str, content: bytes, mentions: tuple = ("train.tsv",), pair: bool = False
) -> None:
    def run(ctx: Context, folder: Path) -> str | None:
        (folder / "train.tsv").write_bytes(content)
        data = ctx.data_section()
        data["train"] = str(folder / "train.tsv")
        if pair:
            (folder / "tgt.txt").write_bytes(b"x\n")
            data["train"] = [str(folder / "train.tsv"), str(folder / "tgt.txt")]
        path = ctx.config(folder, data=data)
        return one_line_error(
            ctx.attnkit(["train", str(path), "--output-dir", "run"], folder), *mentions
        )

    CASES.append(Case(name, "held", run, needs_model=False))


data_case("data_tsv_three_columns", b"ab\tba\tx\n")
data_case("data_tsv_no_tab", b"ab ba\n")
data_case("data_tsv_not_utf8", b"ab\tba\n\xff\xfe\tx\n", ("train.tsv:2",))
data_case("data_tsv_empty_file", b"")
data_case("data_tsv_empty_line", b"ab\tba\n\ncd\tdc\n", ("train.tsv:2",))
data_case("data_tsv_empty_target", b"ab\t \n")
data_case("data_tsv_binary", bytes(range(256)) * 4)
data_case("data_parallel_line_counts_differ", b"a\nb\nc\n", pair=True)


@case("data_tsv_missing_file", "held", needs_model=False)
def _missing_data(ctx: Context, folder: Path) -> str | None:
    data = {**ctx.data_section(), "train": str(folder / "nowhere.tsv")}
    return one_line_error(
        ctx.attnkit(["train", str(ctx.config(folder, data=data)), "--output-dir", "run"], folder),
        "nowhere.tsv",
    )


@case("data_tsv_is_a_directory", "held", needs_model=False)
def _dir_data(ctx: Context, folder: Path) -> str | None:
    data = {**ctx.data_section(), "train": str(folder)}
    return one_line_error(
        ctx.attnkit(["train", str(ctx.config(folder, data=data)), "--output-dir", "run"], folder)
    )


@case("config_file_missing", "held", needs_model=False)
def _missing_config(ctx: Context, folder: Path) -> str | None:
    return one_line_error(ctx.attnkit(["train", "nowhere.yaml"], folder), "nowhere.yaml")


@case("data_g2p_directory_without_files", "held", needs_model=False)
def _g2p_empty(ctx: Context, folder: Path) -> str | None:
    (folder / "cmu").mkdir()
    (folder / "cmu" / "train.txt").write_bytes(b"\x00\x01 binary\n")
    path = ctx.config(
        folder,
        data={
            "task": "g2p",
            "directory": str(folder / "cmu"),
            "train": None,
            "dev": None,
            "test": None,
            "tgt_level": "word",
        },
    )
    return one_line_error(ctx.attnkit(["train", str(path), "--output-dir", "run"], folder))


# ---- checkpoints: damaged, foreign, pickled ---------------------------------------------------
def _truncate(ckpt: Path, folder: Path) -> None:
    data = (ckpt / "model.safetensors").read_bytes()
    (ckpt / "model.safetensors").write_bytes(data[: len(data) // 2])


def _pickle_as(name: str):
    def damage(ckpt: Path, folder: Path) -> None:
        (ckpt / name).write_bytes(pickle.dumps({"weights": _Planted(folder / "unpickled")}))

    return damage


def _nonfinite(value: float):
    def damage(ckpt: Path, folder: Path) -> None:
        def change(t):
            key = sorted(k for k in t if t[k].dtype.kind == "f")[0]
            t[key] = t[key].copy()
            t[key].flat[0] = value
            return t

        edit_tensors(ckpt / "model.safetensors", change)

    return damage


def _as_dtype(dtype: str):
    def damage(ckpt: Path, folder: Path) -> None:
        edit_tensors(
            ckpt / "model.safetensors", lambda t: {k: v.astype(dtype) for k, v in t.items()}
        )

    return damage


def _wrong_shape(ckpt: Path, folder: Path) -> None:
    import numpy as np

    def change(t):
        key = sorted(t)[0]
        t[key] = np.zeros((t[key].shape[0] + 1, *t[key].shape[1:]), dtype=t[key].dtype)
        return t

    edit_tensors(ckpt / "model.safetensors", change)


def _foreign(ckpt: Path, folder: Path) -> None:
    import numpy as np

    edit_tensors(
        ckpt / "model.safetensors", lambda t: {"encoder.weight": np.zeros((3, 3), np.float32)}
    )


def _write(name: str, content: bytes):
    def damage(ckpt: Path, folder: Path) -> None:
        (ckpt / name).write_bytes(content)

    return damage


def _remove(name: str):
    def damage(ckpt: Path, folder: Path) -> None:
        (ckpt / name).unlink()

    return damage


def _meta(**changes):
    def damage(ckpt: Path, folder: Path) -> None:
        def change(meta):
            for k, v in changes.items():
                if v is None:
                    meta.pop(k, None)
                else:
                    meta[k] = v

        edit_json(ckpt / "meta.json", change)

    return damage


def _tokenizer_file(model_file: str):
    def damage(ckpt: Path, folder: Path) -> None:
        edit_json(
            ckpt / "tokenizers.json",
            lambda d: d.update(source={"kind": "sentencepiece", "model_file": model_file}),
        )

    return damage


damaged_checkpoint_case("ckpt_model_truncated", "held", _truncate, mentions=("model.safetensors",))
damaged_checkpoint_case("ckpt_model_empty_file", "held", _write("model.safetensors", b""))
damaged_checkpoint_case("ckpt_model_missing", "held", _remove("model.safetensors"))
damaged_checkpoint_case("ckpt_model_is_a_pickle", "held", _pickle_as("model.safetensors"))
damaged_checkpoint_case("ckpt_model_foreign_tensors", "held", _foreign)
damaged_checkpoint_case("ckpt_model_wrong_shape", "held", _wrong_shape)
damaged_checkpoint_case("ckpt_model_nan_weight", "5", _nonfinite(float("nan")))
damaged_checkpoint_case("ckpt_model_inf_weight", "5", _nonfinite(float("inf")))
damaged_checkpoint_case("ckpt_model_int64_weights", "5", _as_dtype("int64"))
damaged_checkpoint_case("ckpt_model_float64_weights", "5", _as_dtype("float64"))
damaged_checkpoint_case("ckpt_meta_missing", "held", _remove("meta.json"))
damaged_checkpoint_case("ckpt_meta_not_json", "held", _write("meta.json", b"{not json"))
damaged_checkpoint_case("ckpt_meta_wrong_format", "held", _meta(format="something-else"))
damaged_checkpoint_case("ckpt_meta_wrong_version", "held", _meta(version=99))
damaged_checkpoint_case("ckpt_meta_without_family_translate", "held", _meta(family=None))
damaged_checkpoint_case("ckpt_meta_without_family_evaluate", "7", _meta(family=None), "evaluate")
damaged_checkpoint_case("ckpt_meta_without_family_plot", "7", _meta(family=None), "plot")
damaged_checkpoint_case("ckpt_labelled_vision_evaluate", "held", _meta(family="vision"), "evaluate")
damaged_checkpoint_case("ckpt_config_missing", "held", _remove("config.yaml"))
damaged_checkpoint_case("ckpt_config_unknown_key", "held", _write("config.yaml", b"colour: blue\n"))
damaged_checkpoint_case("ckpt_vocab_not_json", "held", _write("src_vocab.json", b"\xff\xfe"))
damaged_checkpoint_case(
    "ckpt_tokenizer_unknown_kind",
    "held",
    lambda c, f: edit_json(c / "tokenizers.json", lambda d: d.update(source={"kind": "x"})),
)
damaged_checkpoint_case(
    "ckpt_tokenizer_path_traversal", "held", _tokenizer_file("../../../etc/passwd")
)
damaged_checkpoint_case("ckpt_tokenizer_absolute_path", "held", _tokenizer_file("/etc/passwd"))


@case("ckpt_data_paths_not_followed_by_evaluate_split", "f44")
def _ckpt_data_paths(ctx: Context, folder: Path) -> str | None:
    """A checkpoint whose data.test names a file elsewhere (a FIFO: reading it would block):
    ``evaluate --split test`` reads the split from --data-dir, else refuses in one line."""
    import yaml

    ckpt = ctx.best_copy(folder)
    os.mkfifo(folder / "elsewhere.tsv")
    config = yaml.safe_load((ckpt / "config.yaml").read_text(encoding="utf-8"))
    config["data"]["test"] = str(folder / "elsewhere.tsv")
    (ckpt / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    args = ["evaluate", "--model", str(ckpt), "--beam", "1", "--out", "eval"]
    if why := one_line_error(ctx.attnkit(args, folder), "--data-dir"):
        return f"no --data-dir: {why}"
    (folder / "mine").mkdir()
    (folder / "mine" / "elsewhere.tsv").write_text("ab\tba\ncd\tdc\n", encoding="utf-8")
    if why := succeeded(ctx.attnkit([*args, "--data-dir", "mine"], folder)):
        return f"--data-dir mine: {why}"
    hyps = (folder / "eval" / "hyps.greedy.txt").read_text(encoding="utf-8").splitlines()
    return None if len(hyps) == 2 else f"{len(hyps)} hypotheses, expected mine/'s 2"


@case("ckpt_is_a_file", "held")
def _ckpt_file(ctx: Context, folder: Path) -> str | None:
    (folder / "model.bin").write_bytes(b"x")
    return one_line_error(ctx.attnkit(["translate", "--model", "model.bin", "abc"], folder))


# ---- 3: resume must not trust trainer state ----------------------------------------------------
def _moment(change):
    def damage(last: Path) -> None:
        def edit(t):
            key = sorted(k for k in t if k.endswith("exp_avg"))[0]
            t[key] = change(t[key])
            return t

        edit_tensors(last / "trainer.safetensors", edit)

    return damage


def _np():
    import numpy as np

    return np


resume_case(
    "resume_moment_one_row_more",
    "3",
    _moment(lambda v: _np().ones((v.shape[0] + 1, *v.shape[1:]), v.dtype)),
)
resume_case("resume_moment_one_element", "3", _moment(lambda v: _np().full((1,), 1e30, v.dtype)))
resume_case("resume_moment_int64", "3", _moment(lambda v: v.astype("int64")))
resume_case("resume_moment_nan", "3", _moment(lambda v: _np().full_like(v, float("nan"))))
resume_case(
    "resume_trainer_json_without_optimizer",
    "3",
    lambda last: edit_json(last / "trainer.json", lambda d: d.pop("optimizer")),
    ("optimizer",),
)
resume_case(
    "resume_trainer_json_unknown_state_field",
    "3",
    lambda last: edit_json(last / "trainer.json", lambda d: d["state"].update(bogus_field=1)),
    ("bogus_field",),
)
resume_case(
    "resume_without_rng_state",
    "3",
    lambda last: edit_tensors(
        last / "trainer.safetensors", lambda t: {k: v for k, v in t.items() if k != "rng.torch"}
    ),
    ("rng",),
)
resume_case(
    "resume_trainer_json_not_json", "held", lambda last: (last / "trainer.json").write_bytes(b"{")
)
resume_case(
    "resume_trainer_state_is_a_pickle",
    "held",
    lambda last: (last / "trainer.safetensors").write_bytes(
        pickle.dumps(_Planted(last.parent.parent / "unpickled"))
    ),
)


@case("resume_nothing_to_resume", "held", needs_model=False)
def _resume_nothing(ctx: Context, folder: Path) -> str | None:
    args = ["train", str(ctx.config(folder)), "--output-dir", "run", "--resume"]
    return one_line_error(ctx.attnkit(args, folder), "resume")


@case("resume_other_model_config", "held")
def _resume_other(ctx: Context, folder: Path) -> str | None:
    ctx.run_copy(folder)
    args = [
        "train",
        str(ctx.config(folder)),
        "--output-dir",
        "run",
        "--resume",
        "--set",
        "model.decoder_hidden=32",
    ]
    return one_line_error(ctx.attnkit(args, folder))


@case("resume_intact_checkpoint_trains_on", "held")
def _resume_ok(ctx: Context, folder: Path) -> str | None:
    run_dir = ctx.run_copy(folder)
    args = [
        "train",
        str(ctx.config(folder)),
        "--output-dir",
        "run",
        "--resume",
        "--set",
        "train.epochs=3",
    ]
    why = succeeded(ctx.attnkit(args, folder))
    return why or finite_checkpoint(run_dir / "last")


# ---- 5: NaN/inf guard --------------------------------------------------------------------------
@case("train_lr_1e38_writes_no_nonfinite_weights", "5", needs_model=False)
def _lr_huge(ctx: Context, folder: Path) -> str | None:
    path = ctx.config(folder, train={"epochs": 3, "eval_every": 2})
    res = ctx.attnkit(["train", str(path), "--output-dir", "run", "--set", "train.lr=1e38"], folder)
    if "Traceback" in res.stderr:
        return f"a traceback: {res.tail()}"
    if res.rc not in (0, 2) or (res.rc == 2 and last_line_error(res)):
        return f"exit {res.rc}: {res.tail()}"
    for sub in ("best", "last"):
        if (folder / "run" / sub).exists() and (bad := finite_checkpoint(folder / "run" / sub)):
            return bad
    return None


# ---- 6: checkpoints and run directories ----------------------------------------------------------
@case("train_fresh_into_existing_run_refused", "6")
def _fresh_existing(ctx: Context, folder: Path) -> str | None:
    run_dir = ctx.run_copy(folder)
    before = [digest(run_dir / sub) for sub in ("best", "last")]  # a lock file may come and go
    why = one_line_error(
        ctx.attnkit(["train", str(ctx.config(folder)), "--output-dir", "run"], folder), "overwrite"
    )
    if [digest(run_dir / sub) for sub in ("best", "last")] != before:
        return "the existing checkpoints were replaced"
    return why


@case("train_fresh_with_overwrite_replaces", "6")
def _fresh_overwrite(ctx: Context, folder: Path) -> str | None:
    run_dir = ctx.run_copy(folder)
    res = ctx.attnkit(
        ["train", str(ctx.config(folder)), "--output-dir", "run", "--overwrite"], folder
    )
    return succeeded(res) or finite_checkpoint(run_dir / "best")


@case("train_output_dir_under_a_file", "6", needs_model=False)
def _unwritable(ctx: Context, folder: Path) -> str | None:
    """An output directory that cannot be made: refused before training, in one line."""
    (folder / "afile").write_text("x")
    res = ctx.attnkit(["train", str(ctx.config(folder)), "--output-dir", "afile/run"], folder)
    return one_line_error(res)  # one line: no run's lines (progress is on stderr) before it


@case("train_read_only_output_dir", "6", needs_model=False)
def _read_only(ctx: Context, folder: Path) -> str | None:
    if os.geteuid() == 0:
        raise Skip("root writes into read-only directories")
    (folder / "ro").mkdir()
    (folder / "ro").chmod(0o555)
    try:
        res = ctx.attnkit(["train", str(ctx.config(folder)), "--output-dir", "ro/run"], folder)
    finally:
        (folder / "ro").chmod(0o755)
    return one_line_error(res)  # one line: no run's lines (progress is on stderr) before it


@case("evaluate_default_output_outside_checkpoint", "6")
def _eval_default(ctx: Context, folder: Path) -> str | None:
    ckpt = ctx.best_copy(folder)
    before = digest(ckpt)
    args = ["evaluate", "--model", str(ckpt), "--beam", "1", "--data-dir", str(ctx.data)]
    why = succeeded(ctx.attnkit(args, folder))
    if why is None and digest(ckpt) != before:
        return "evaluate wrote into the checkpoint directory (the next save deletes it)"
    return why


class Running:
    """A background ``attnkit`` process (its own process group) whose stdout lines are collected
    as they come. Its waits are bounded as every command is (:class:`faults_zygote.Budget`: CPU
    seconds of its group and the stall guard), not by wall time."""

    def __init__(self, ctx: Context, args: list, cwd: Path):
        self.proc = subprocess.Popen(
            ctx.command(args),
            cwd=cwd,
            env=ctx.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.err = b""
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        for raw in self.proc.stdout:
            self.lines.append(raw.decode("utf-8", "replace"))

    def _read_err(self) -> None:
        self.err = self.proc.stderr.read()

    def wait_until(self, ready: Callable[[], bool], cpu_s: float = 120) -> bool:
        """Wait until ``ready()`` (True), the process ends or its budget of ``cpu_s`` CPU
        seconds is spent (``ready()`` then)."""
        from faults_zygote import Budget

        budget = Budget(self.proc.pid, cpu_s)
        while self.proc.poll() is None and budget.exceeded() is None:
            if ready():
                return True
            time.sleep(0.05)
        return ready()

    def wait_for(self, needle: str, count: int = 1, timeout: float = 120) -> bool:
        """Wait for ``count`` stdout lines holding ``needle`` (``timeout``: CPU seconds)."""
        return self.wait_until(lambda: sum(needle in ln for ln in self.lines) >= count, timeout)

    def wait_for_records(self, run_dir: Path, kind: str, count: int = 1) -> bool:
        """Wait for ``count`` records of ``kind`` (``train``: every 20 updates, from inside the
        training loop; ``dev``: an evaluation) in ``run_dir/metrics.jsonl``, the run's own
        machine-readable record: no wording of its log lines is relied on."""

        def seen() -> bool:
            try:
                text = (run_dir / "metrics.jsonl").read_text(encoding="utf-8")
            except OSError:
                return False
            kinds = []
            for line in text.splitlines():
                try:
                    kinds.append(json.loads(line).get("kind"))
                except ValueError:  # a line being written
                    pass
            return kinds.count(kind) >= count

        return self.wait_until(seen)

    def finish(self, timeout: float = 120) -> Result:
        """Wait for the end (killed past ``timeout`` CPU seconds or the stall guard)."""
        if not self.wait_until(lambda: self.proc.poll() is not None, timeout):
            self.proc.kill()
        rc = self.proc.wait()
        time.sleep(0.1)  # let the readers drain
        return Result(rc, "".join(self.lines), self.err.decode("utf-8", "replace"), 0.0)


@case("train_two_trainers_one_run_dir", "6", needs_model=False)
def _two_trainers(ctx: Context, folder: Path) -> str | None:
    path = ctx.long_config(folder, max_minutes=0.3)
    first = Running(ctx, ["train", str(path), "--output-dir", "run"], folder)
    try:
        if not first.wait_for_records(folder / "run", "train"):
            return f"the first trainer did not start: {first.finish(5).tail()}"
        time.sleep(1.0)
        second = ctx.attnkit(
            ["train", str(path), "--output-dir", "run", "--overwrite"], folder, timeout=90
        )
    finally:
        res = first.finish()
    why = one_line_error(second)
    if why:
        return f"second trainer: {why}"
    if (why := succeeded(res)) is not None:
        return f"first trainer: {why}"
    return finite_checkpoint(folder / "run" / "last")


def _interrupt_case(name: str, sig: int, resume: bool) -> None:
    def run(ctx: Context, folder: Path) -> str | None:
        path = ctx.long_config(folder, max_minutes=INTERRUPTED_MINUTES)
        proc = Running(ctx, ["train", str(path), "--output-dir", "run"], folder)
        if not proc.wait_for_records(folder / "run", "train"):  # in the loop, signals handled
            return f"training did not start: {proc.finish(5).tail()}"
        time.sleep(2.0)  # mid-epoch: no evaluation has saved anything yet
        if proc.proc.poll() is not None:
            return f"the run ended (exit {proc.proc.returncode}) before the signal"
        proc.proc.send_signal(sig)
        res = proc.finish(90)
        if res.rc < 0:
            return f"killed by the signal (exit {res.rc}), nothing saved"
        if "Traceback" in res.stderr:
            return f"a traceback: {res.tail()}"
        if len(res.lines()) != 1:
            return f"{len(res.lines())} stderr lines, expected one: {res.tail()}"
        last = folder / "run" / "last"
        if not (last / "meta.json").is_file():
            return "no last/ checkpoint after the signal"
        if bad := finite_checkpoint(last):
            return bad
        if resume:
            again = ctx.attnkit(
                [
                    "train",
                    str(path),
                    "--output-dir",
                    "run",
                    "--resume",
                    "--set",
                    "train.max_minutes=0.05",
                ],
                folder,
                timeout=120,
            )
            if why := succeeded(again):
                return f"--resume after the signal: {why}"
        return None

    CASES.append(Case(name, "6", run, needs_model=False))


_interrupt_case("train_sigterm_saves_last_and_resumes", signal.SIGTERM, resume=True)
_interrupt_case("train_sigint_saves_last", signal.SIGINT, resume=False)


@case("train_kill9_then_resume", "6", needs_model=False)
def _kill9(ctx: Context, folder: Path) -> str | None:
    path = ctx.long_config(folder, eval_every=10, max_minutes=INTERRUPTED_MINUTES)
    proc = Running(ctx, ["train", str(path), "--output-dir", "run"], folder)
    if not proc.wait_for_records(folder / "run", "dev", count=2):
        return f"training did not evaluate twice: {proc.finish(5).tail()}"
    time.sleep(random.Random(os.getpid()).uniform(0.0, 1.0))
    proc.proc.kill()
    proc.finish(30)
    res = ctx.attnkit(
        ["train", str(path), "--output-dir", "run", "--resume", "--set", "train.max_minutes=0.05"],
        folder,
        timeout=120,
    )
    if why := succeeded(res):
        return f"--resume after kill -9: {why}"
    # the temporaries of interrupted saves (a lock file is no leftover)
    run_dir = folder / "run"
    leftovers = [p.name for p in run_dir.iterdir() if p.name.startswith((".last", ".best"))]
    if leftovers:
        return f"temporaries left behind: {', '.join(leftovers)}"
    return finite_checkpoint(folder / "run" / "last")


# ---- 7: decoding inputs and options --------------------------------------------------------------
def _tr(*extra: str):
    return lambda ctx, folder: ["translate", "--model", str(ctx.best_copy(folder)), *extra]


def _ev(*extra: str):
    return lambda ctx, folder: [
        "evaluate",
        "--model",
        str(ctx.best_copy(folder)),
        "--out",
        "eval",
        *extra,
    ]


def _pl(*extra: str):
    return lambda ctx, folder: ["plot", "--model", str(ctx.best_copy(folder)), *extra]


def _decoded(res: Result) -> str | None:
    return succeeded(res) or (None if res.stdout.strip() else "no output")


cli_case("translate_beam_zero", "held", _tr("--beam", "0", "abc"), mentions=("beam",))
cli_case(
    "translate_n_best_above_beam",
    "held",
    _tr("--beam", "2", "--n-best", "3", "abc"),
    mentions=("n-best",),
)
cli_case(
    "translate_alpha_nan", "7", _tr("--beam", "2", "--alpha", "nan", "abc"), mentions=("alpha",)
)
cli_case("translate_threads_negative", "8", _tr("--threads", "-1", "abc"), mentions=("threads",))
cli_case(
    "translate_threads_zero",
    "8",
    _tr("--threads", "0", "abc"),
    check=lambda r: _decoded(r) if r.rc == 0 else one_line_error(r, "threads"),
)


def _blank_line_kept(res: Result) -> str | None:
    """Success: one output line per input line, the blank one blank, and a warning naming it."""
    if why := succeeded(res):
        return why
    out = res.stdout.split("\n")
    if len(out) != 4 or out[1] != "":  # three lines, each ending in a newline
        return f"the blank input did not give a blank output line: {res.stdout[:200]!r}"
    if "attnkit: warning: 1 blank input(s) (line 2)" not in res.stderr:
        return f"no warning naming the blank line: {res.tail()}"
    return None


cli_case("translate_blank_input", "held", _tr("-"), stdin=b"abc\n   \nab\n", check=_blank_line_kept)
cli_case("translate_empty_stdin", "held", _tr("-"), stdin=b"")
cli_case(
    "translate_overlong_input_warns",
    "held",
    _tr("a" * 5000),
    check=lambda r: (
        _decoded(r)
        or (None if "attnkit: warning:" in r.stderr else "no warning about the truncation")
    ),
)
cli_case("translate_non_utf8_stdin", "7", _tr("-"), check=error_or_warning, stdin=b"ab\xff\xfecd\n")
cli_case(
    "translate_non_utf8_argv", "7", lambda c, f: _tr()(c, f) + [b"ab\xffcd"], check=error_or_warning
)
cli_case(
    "translate_non_utf8_attention_json",
    "7",
    _tr("--attention-out", "att.json", "-"),
    check=error_or_warning,
    stdin=b"ab\xffcd\n",
)
cli_case("translate_attention_out_bad_suffix", "held", _tr("--attention-out", "att.txt", "abc"))
cli_case("evaluate_beam_zero", "held", _ev("--beam", "0"), mentions=("beam",))
cli_case("evaluate_alpha_nan", "7", _ev("--beam", "2", "--alpha", "nan"), mentions=("alpha",))
cli_case("evaluate_threads_negative", "8", _ev("--threads", "-1"), mentions=("threads",))
cli_case("plot_beam_zero", "held", _pl("abc", "--beam", "0", "-o", "x.png"), mentions=("beam",))
cli_case(
    "plot_alpha_nan",
    "7",
    _pl("abc", "--beam", "2", "--alpha", "nan", "-o", "x.png"),
    mentions=("alpha",),
)
cli_case(
    "plot_threads_negative",
    "8",
    _pl("abc", "--threads", "-1", "-o", "x.png"),
    mentions=("threads",),
)
cli_case("plot_no_text", "held", _pl("-o", "x.png"))
cli_case("plot_bad_suffix", "held", _pl("abc", "-o", "x.gif"))
cli_case(
    "plot_non_utf8_argv",
    "7",
    lambda c, f: _pl("-o", "x.svg")(c, f) + [b"ab\xffcd"],
    check=error_or_warning,
)


@case("report_and_svg_escape_markup", "held")
def _escaping(ctx: Context, folder: Path) -> str | None:
    """Markup in the data or the input is text in report.html and in an SVG heatmap, not markup."""
    ckpt = ctx.best_copy(folder)
    if why := succeeded(
        ctx.attnkit(
            [
                "evaluate",
                "--model",
                str(ckpt),
                "--beam",
                "1",
                "--out",
                "eval",
                "--data-dir",
                str(ctx.data),
            ],
            folder,
        )
    ):
        return f"evaluate: {why}"
    report = (folder / "eval" / "report.html").read_text(encoding="utf-8")
    for raw in (XSS, "<img src=x"):
        if raw in report:
            return f"report.html holds {raw!r} unescaped"
    if why := succeeded(ctx.attnkit(["plot", "--model", str(ckpt), XSS, "-o", "x.svg"], folder)):
        return f"plot: {why}"
    if "<script" in (folder / "x.svg").read_text(encoding="utf-8"):
        return "the SVG holds a <script> element"
    return None


# ---- 4: the compiled-kernel cache ----------------------------------------------------------------
PLANT = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("ran\n", f); fclose(f); }
}
"""


def _native_ready(ctx: Context, folder: Path, cache: Path) -> None:
    """A copy of the kernel cache built once by a translation (Skip where there are no kernels)."""
    ctx.best_copy(folder)
    with ctx.native_lock:
        if ctx.native_cache is None:
            ctx.native_cache = ctx.root / "native-cache"
            if shutil.which("cc") is None:
                ctx.native_skip = "no C compiler"
            else:
                probe = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        "from attnkit.accel import native; print(native.enabled())",
                    ],
                    env=ctx.env(),
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                if probe.stdout.strip() != "True":
                    ctx.native_skip = (
                        "the native kernels are off here (no AVX2, or ATTNKIT_NATIVE=0)"
                    )
            if ctx.native_skip is None:
                res = ctx.attnkit(
                    ["translate", "--model", str(folder / "ckpt"), "abc"],
                    folder,
                    env=ctx.env(ATTNKIT_CACHE_DIR=str(ctx.native_cache)),
                )
                if res.rc != 0 or not list(ctx.native_cache.glob("*.so")):
                    ctx.native_skip = f"the kernels did not build here: {res.tail()}"
    if ctx.native_skip:
        raise Skip(ctx.native_skip)
    shutil.copytree(ctx.native_cache, cache)


def _plant(folder: Path, cache: Path, marker: Path) -> None:
    """Replace every library in ``cache`` by one whose constructor writes ``marker``."""
    src = folder / "planted.c"
    src.write_text(PLANT % marker, encoding="utf-8")
    built = folder / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(built)], check=True, timeout=60)
    for lib in cache.glob("*.so"):
        shutil.copyfile(built, lib)


def native_case(name: str, prepare: Callable[[Path, Path], None]) -> None:
    """Plant a library in the kernel cache; ``prepare(cache, lib)`` sets owner and mode."""

    def run(ctx: Context, folder: Path) -> str | None:
        cache = folder / "cache"
        _native_ready(ctx, folder, cache)
        marker = folder / "planted-ran"
        _plant(folder, cache, marker)
        for lib in cache.glob("*.so"):
            prepare(cache, lib)
        res = ctx.attnkit(
            ["translate", "--model", str(folder / "ckpt"), "abc"],
            folder,
            env=ctx.env(ATTNKIT_CACHE_DIR=str(cache)),
        )
        if marker.exists():
            return "the planted library was loaded (its constructor ran)"
        return _decoded(res)

    CASES.append(Case(name, "4", run))


def _as_nobody(cache: Path, lib: Path) -> None:
    if os.geteuid() != 0:
        raise Skip("only root can give a file to another user")
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        raise Skip("no user 'nobody'") from None
    os.chown(lib, nobody.pw_uid, nobody.pw_gid)
    lib.chmod(0o777)


native_case("native_planted_world_writable_library", lambda cache, lib: lib.chmod(0o777))
native_case(
    "native_planted_in_world_writable_cache_dir",
    lambda cache, lib: (lib.chmod(0o644), cache.chmod(0o777)),
)
native_case("native_planted_library_owned_by_nobody", _as_nobody)
native_case(
    "native_planted_library_private_mode_other_content",
    lambda cache, lib: (lib.chmod(0o600), cache.chmod(0o700)),
)


@case("native_cache_dir_created_private_under_umask_000", "4")
def _umask(ctx: Context, folder: Path) -> str | None:
    cache = folder / "fresh" / "cache"
    _native_ready(ctx, folder, folder / "probe-cache")  # skips where there are no kernels to build
    res = ctx.attnkit(
        ["translate", "--model", str(folder / "ckpt"), "abc"],
        folder,
        env=ctx.env(ATTNKIT_CACHE_DIR=str(cache)),
        preexec_fn=lambda: os.umask(0),
    )
    if why := _decoded(res):
        return why
    if not cache.exists():
        return None  # nothing cached at all is private too
    mode = cache.stat().st_mode & 0o777
    return (
        f"the cache directory has mode {mode:o}, expected no group/other access"
        if mode & 0o077
        else None
    )


# ---- running ------------------------------------------------------------------------------------
# ---- the issue "Bounded against hostile input" (items b1-b8): benchmarks/faults_bounded.py -----
sys.path.insert(0, str(Path(__file__).resolve().parent))
from faults_bounded import register as _register_bounded  # noqa: E402

_register_bounded(sys.modules[__name__])

# ---- every family's data files (issue 44's readers): benchmarks/faults_families.py ------------
from faults_families import register as _register_families  # noqa: E402

_register_families(sys.modules[__name__])

# ---- the same classes of case for every registered family: benchmarks/faults_registry.py -------
from faults_registry import register as _register_registry  # noqa: E402

_register_registry(sys.modules[__name__])


def run_case(ctx: Context, c: Case) -> tuple[str, str | None, float]:
    folder = ctx.root / "cases" / c.name
    folder.mkdir(parents=True)
    t0 = time.time()
    try:
        why = c.run(ctx, folder)
        status = "held" if why is None else "failed"
    except Skip as exc:
        status, why = "skipped", str(exc)
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, named
        status, why = "failed", f"the case itself broke: {type(exc).__name__}: {exc}"
    return status, why, time.time() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="SUBSTRING",
        help="run the cases whose name contains SUBSTRING (repeatable)",
    )
    p.add_argument(
        "--item", action="append", default=[], help="run the cases of this issue item (repeatable)"
    )
    p.add_argument("--list", action="store_true", help="list the cases (name, issue item) and exit")
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary directory (its path is printed)"
    )
    p.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="CPU seconds per command (default 120); a command that gains no CPU for 30 s of "
        "wall time is given up on as blocked (benchmarks/faults_zygote.py's Budget)",
    )
    p.add_argument(
        "--no-fork",
        action="store_true",
        help="start a fresh interpreter for every command (default: fork each from one process "
        "that imported torch and attnkit once, benchmarks/faults_zygote.py)",
    )
    args = p.parse_args(argv)
    cases = [
        c
        for c in CASES
        if (not args.only or any(s in c.name for s in args.only))
        and (not args.item or c.item in args.item)
    ]
    if args.list:
        for c in cases:
            print(f"{c.name}\t{c.item}")
        return 0
    if not cases:
        print(f"no case matches --only {args.only} --item {args.item}", file=sys.stderr)
        return 2
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # started in the background by a shell (``&``), which ignores SIGINT: every command would
        # inherit that, and a trainer keeps ignoring it, as a background job should; the cases
        # send SIGINT as Ctrl-C does to a command in the foreground
        signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.time()
    root = Path(tempfile.mkdtemp(prefix="attnkit-faults-"))
    ctx = Context(root, args.timeout, fork=not args.no_fork)
    results: dict[str, tuple[str, str | None, float]] = {}
    done = 0
    lock = threading.Lock()

    def one(c: Case) -> None:
        nonlocal done
        results[c.name] = outcome = run_case(ctx, c)
        with lock:
            done += 1
            status, why, seconds = outcome
            tail = f": {why}" if why else ""
            print(
                f"[{done:3d}/{len(cases)}] {status:7s} {c.name} ({c.item}, {seconds:.1f} s){tail}",
                file=sys.stderr,
                flush=True,
            )

    # cases that need the model wait for it; start the training at once when any does
    ordered = sorted(cases, key=lambda c: not c.needs_model)
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, ordered))
    finally:
        ctx.close()
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    failed = [
        {"name": c.name, "item": c.item, "why": results[c.name][1]}
        for c in cases
        if results[c.name][0] == "failed"
    ]
    skipped = [
        {"name": c.name, "why": results[c.name][1]}
        for c in cases
        if results[c.name][0] == "skipped"
    ]
    held = sum(results[c.name][0] == "held" for c in cases)
    print(
        json.dumps(
            {
                "cases": held + len(failed),
                "held": held,
                "failed": len(failed),
                "failed_cases": failed,
                "skipped": skipped,
                "seconds": round(time.time() - t0, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
