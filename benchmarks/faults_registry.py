"""The same hostile cases for every registered family (issue 44, item ``f44``), registered into
benchmarks/faults.py: the harness iterates ``attnkit.families.FAMILIES`` and reads what to break
from each family's :class:`~attnkit.families.fault_inputs.FaultInputs` (its ``faults.py``), so a
family that registers gets these cases without an edit here. For a family ``F``:

- ``family_F_data_{fifo,dev_zero,endless}_<file>``: each data file its tiny experiment reads
  replaced by a FIFO, a link to ``/dev/zero`` and one 2 MB line: ``attnkit train`` ends with exit
  2 and one line naming the file (a family with a checkpoint function: its first command,
  given the file, on its checkpoint).
- ``family_F_api``: wrong types and huge values for every argument of its API calls
  (benchmarks/faults_probe.py).
- ``family_F_checkpoint``: a FIFO in place of each checkpoint file, each config integer set to
  4e9, a safetensors header declaring a huge tensor, the next family's weights.
- ``family_F_serve``: every other family's request to that family's route while F's model is
  served (a 4xx, never a 500); a family with no endpoint: ``serve`` refuses it in one line.
- ``family_F_command_fifo_weights`` / ``family_F_command_foreign``: its command line with a FIFO
  as the weights, and with the next family's checkpoint.
- ``family_F_resume_{kill9,sigterm,full_disk}`` (where it resumes): a run interrupted once its
  first ``last/`` exists, then resumed, ends with the weights of one never interrupted, bit for
  bit (started in a copy of that run's folder: the data and caches it made, not its run).

Every command runs under an address-space cap and fails above :data:`MAX_RSS_MB` of peak RSS;
the time bound is each command's CPU seconds, :data:`COMMAND_S` (probes: :data:`PROBE_SECONDS`),
with the stall guard of ``faults_zygote.Budget``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml
from faults_bounded import bounded, capped

ITEM = "f44"
HERE = Path(__file__).resolve().parent
PROBE = HERE / "faults_probe.py"
PROBE_SECONDS = 240
COMMAND_S = 60  # CPU seconds a command of these cases may take
PROBE_RSS_MB = 1536  # transformers and torch loaded together
PROBE_CAP = 6 << 30
#: how often an interrupted run is looked at for its first last/ (the signal follows at once)
POLL_S = 0.005

#: makes every checkpoint write fail, as a full disk does, once the run has a last/ to resume
FULL_DISK = """
import os, runpy, sys
import attnkit.checkpoint as ckpt
from safetensors import SafetensorError
real = ckpt.save_file
def save_file(*args, **kwargs):
    if os.path.exists(os.path.join("run", "last", "trainer.json")):
        raise SafetensorError("IoError(No space left on device (os error 28))")
    return real(*args, **kwargs)
ckpt.save_file = save_file
sys.argv = ["attnkit", *sys.argv[1:]]
runpy.run_module("attnkit", run_name="__main__", alter_sys=True)
"""


def _families():
    sys.path.insert(0, str(HERE.parent / "src"))
    from attnkit.families import FAMILIES

    return FAMILIES


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", Path(name).name.lower()).strip("_")


class Models:
    """Each family's tiny checkpoint, and its tiny experiment's uninterrupted run (the resume
    cases' reference), each made once on first need (a lock per family and kind)."""

    def __init__(self, h, ctx):
        self.h, self.ctx = h, ctx
        self.locks: dict[str, threading.Lock] = {}
        self.made: dict[str, str | Exception] = {}
        self.guard = threading.Lock()

    def folder(self, family: str) -> Path:
        return self.ctx.root / "families" / family

    def get(self, family: str) -> str:
        """The family's model: its checkpoint function's, else its experiment's best."""
        return self._once(family, "model", self._make)

    def straight(self, family: str) -> Path:
        """The run directory of the family's experiment trained once, never interrupted."""
        return Path(self._once(family, "run", self._train))

    def _once(self, family: str, kind: str, make) -> str:
        key = f"{family}/{kind}"
        with self.guard:
            lock = self.locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self.made:
                try:
                    self.made[key] = make(family)
                except Exception as exc:  # noqa: BLE001 - every case of the family says why
                    self.made[key] = exc
        made = self.made[key]
        if isinstance(made, Exception):
            raise RuntimeError(f"the {family} {kind} was not made: {made}")
        return made

    def _train(self, family: str) -> str:
        inputs = _families()[family].fault_inputs()
        folder = self.folder(family)
        folder.mkdir(parents=True, exist_ok=True)
        config = write_experiment(inputs, folder)
        res = self.ctx.attnkit(["train", str(config), "--output-dir", "run"], folder, timeout=300)
        if res.rc != 0:
            raise RuntimeError(f"training: exit {res.rc}: {res.tail()}")
        return str(folder / "run")

    def _make(self, family: str) -> str:
        inputs = _families()[family].fault_inputs()
        folder = self.folder(family)
        folder.mkdir(parents=True, exist_ok=True)
        if inputs.checkpoint is None:
            return str(self.straight(family) / "best")
        code = (
            "import sys; from pathlib import Path; from attnkit.families import FAMILIES; "
            f"print(FAMILIES[{family!r}].resolve({inputs.checkpoint!r})(Path(sys.argv[1])))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(folder / "model")],
            capture_output=True,
            text=True,
            env=self.ctx.env(),
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip().splitlines()[-1:])
        return proc.stdout.strip().splitlines()[-1]


def write_experiment(inputs, folder: Path, name: str = "exp.yaml") -> Path:
    """The family's files and tiny experiment in ``folder``; the experiment's path."""
    write_files(inputs, folder)
    path = folder / name
    path.write_text(yaml.safe_dump(dict(inputs.experiment), sort_keys=False), encoding="utf-8")
    return path


def write_files(inputs, folder: Path) -> None:
    """The family's ``files`` in ``folder``."""
    for rel, content in inputs.files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def answered_or_refused(h, res) -> str | None:
    """Exit 0, or exit 2 with one ``attnkit: error:`` line; never a traceback."""
    return h.succeeded(res) if res.rc == 0 else h.one_line_error(res)


def probe(h, ctx, models: Models, family: str, check: str, folder: Path) -> str | None:
    """benchmarks/faults_probe.py's ``check`` on the family's model: None when all held."""
    names = list(_families())
    others = []
    if check == "checkpoint":  # the next family's weights in this family's checkpoint
        other = models.get(names[(names.index(family) + 1) % len(names)])
        others.append(other.rpartition(":")[2] if ":" in other else other)
    spec = {"check": check, "family": family, "model": models.get(family), "folder": str(folder)}
    spec["others"] = others
    write_files(_families()[family].fault_inputs(), folder)  # what its calls read (data_dir=".")
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    forked = ctx.forked(
        [folder / "spec.json"], folder, None, PROBE_SECONDS, PROBE_CAP, script=str(PROBE)
    )
    if forked is not None:
        res = forked[0]
        if res.rc == 124:
            return f"the probe ran past {PROBE_SECONDS} s"
        return _probe_outcome(res.rc, res.stdout, res.stderr)
    code = (
        "import resource, runpy, sys; "
        f"resource.setrlimit(resource.RLIMIT_AS, ({PROBE_CAP}, {PROBE_CAP})); "
        "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(PROBE), str(folder / "spec.json")],
            cwd=folder,
            capture_output=True,
            text=True,
            env=ctx.env(),
            timeout=PROBE_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return f"the probe ran past {PROBE_SECONDS} s"
    return _probe_outcome(proc.returncode, proc.stdout, proc.stderr)


def _probe_outcome(rc: int, stdout: str, stderr: str) -> str | None:
    """None when the probe's last line says every check held (and its RSS was in bounds)."""
    lines = stdout.strip().splitlines()
    if rc != 0 or not lines:
        return f"the probe broke: exit {rc}: {stderr.strip()[-300:]}"
    out = json.loads(lines[-1])
    if out["failures"]:
        shown = "; ".join(out["failures"][:6])
        return f"{len(out['failures'])} of {out['checked']} failed: {shown}"
    if out["rss_mb"] > PROBE_RSS_MB:
        return f"peak RSS {out['rss_mb']:.0f} MB, above {PROBE_RSS_MB} MB"
    return None


def weights_equal(a: Path, b: Path) -> str | None:
    """None when the two model.safetensors hold the same tensors bit for bit."""
    from safetensors.numpy import load_file

    x, y = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    if x.keys() != y.keys():
        return "the resumed run's weights have other names"
    differ = [k for k in x if x[k].tobytes() != y[k].tobytes()]
    if differ:
        return f"resumed weights differ from an uninterrupted run's: {', '.join(differ[:3])}"
    return None


def register(h) -> None:  # noqa: C901 - one list of case builders
    """Add every family's cases to ``h.CASES`` (``h``: the faults module)."""
    state: dict[str, Models] = {}

    def models(ctx) -> Models:
        return state.setdefault("models", Models(h, ctx))

    def add(name: str, run) -> None:
        h.CASES.append(h.Case(name, ITEM, run, needs_model=False))

    for family, record in _families().items():
        inputs = record.fault_inputs()
        prefix = f"family_{family}"
        for data in inputs.data_files:
            for kind in ("fifo", "dev_zero", "endless"):
                case = _data_case(h, models, family, data, kind)
                add(f"{prefix}_data_{kind}_{_slug(data)}", case)
        for check in ("api", "checkpoint"):
            add(
                f"{prefix}_{check}",
                lambda c, f, fam=family, k=check: probe(h, c, models(c), fam, k, f),
            )
        if record.endpoint is not None:
            add(f"{prefix}_serve", _probe_case(h, models, family, "serve"))
        else:
            add(f"{prefix}_serve", _serve_refused(h, models, family))
        if inputs.commands:
            add(f"{prefix}_command_fifo_weights", _command_case(h, models, family, "fifo"))
            add(f"{prefix}_command_foreign", _command_case(h, models, family, "foreign"))
        if inputs.resumes and inputs.experiment is not None:
            for how in ("kill9", "sigterm", "full_disk"):
                add(f"{prefix}_resume_{how}", _resume_case(h, models, family, how))


def _probe_case(h, models, family: str, check: str):
    return lambda ctx, folder: probe(h, ctx, models(ctx), family, check, folder)


def _data_case(h, models, family: str, data: str, kind: str):
    """``data`` replaced by a FIFO, ``/dev/zero`` or one endless line, then the tiny experiment
    trained (or, for a family with none, its first command run on its checkpoint)."""

    def run(ctx, folder: Path) -> str | None:
        inputs = _families()[family].fault_inputs()
        if inputs.checkpoint is None:  # read by training
            config = write_experiment(inputs, folder)
            args = ["train", str(config), "--output-dir", "run"]
        else:
            write_files(inputs, folder)
            model = models(ctx).get(family)
            args = [a.replace("{model}", str(model)) for a in inputs.commands[0]]
        path = folder / data
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev_zero":
            path.symlink_to("/dev/zero")
        else:
            path.write_bytes(b"x" * (2 << 20))  # one line of 2 MB: above the 1 MB line cap
        res, rss, cpu = capped(h, ctx, args, folder, timeout=COMMAND_S)
        return bounded(h, res, rss, cpu, Path(data).name)

    return run


def _serve_refused(h, models, family: str):
    def run(ctx, folder: Path) -> str | None:
        model = models(ctx).get(family)
        args = ["serve", "--model", model, "--port", "0"]
        res, rss, cpu = capped(h, ctx, args, folder, timeout=COMMAND_S)
        return bounded(h, res, rss, cpu, "serve")

    return run


def _command_case(h, models, family: str, how: str):
    def run(ctx, folder: Path) -> str | None:
        inputs = _families()[family].fault_inputs()
        write_files(inputs, folder)  # what the command reads beside the model
        names = list(_families())
        if how == "fifo":
            source = Path(models(ctx).get(family))
            model = folder / "ckpt"
            shutil.copytree(source, model)
            (model / "model.safetensors").unlink()
            os.mkfifo(model / "model.safetensors")
            mentions = ("model.safetensors",)
        else:
            other = names[(names.index(family) + 1) % len(names)]
            model = models(ctx).get(other)
        args = [a.replace("{model}", str(model)) for a in inputs.commands[0]]
        res, rss, cpu = capped(h, ctx, args, folder, timeout=COMMAND_S)
        if how == "foreign":  # the command may apply to the other family's model too
            return answered_or_refused(h, res)
        return bounded(h, res, rss, cpu, *mentions)

    return run


def _resume_case(h, models, family: str, how: str):
    def run(ctx, folder: Path) -> str | None:
        straight = models(ctx).straight(family)
        reference = straight / "last"  # the uninterrupted run's end
        # its folder (data and caches) without its runs: what training made there is read back
        # the same (eSpeak, for one, does not speak a number twice the same to the bit)
        skip = {straight.name, "model"}
        shutil.copytree(
            straight.parent,
            folder,
            dirs_exist_ok=True,
            ignore=lambda d, names: [n for n in names if n in skip and Path(d) == straight.parent],
        )
        inputs = _families()[family].fault_inputs()
        config = write_experiment(inputs, folder)
        train = ["train", str(config), "--output-dir", "run"]
        run_dir = folder / "run"
        if how == "full_disk":
            script = folder / "full_disk.py"
            script.write_text(FULL_DISK, encoding="utf-8")
            res = capped(h, ctx, train, folder, timeout=300, script=str(script))[0]
            if why := h.last_line_error(res, "No space left"):
                return f"the full disk: {why}"
        else:
            proc = subprocess.Popen(
                ctx.command(train),
                cwd=folder,
                env=ctx.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            deadline = time.time() + 120
            while not (run_dir / "last" / "trainer.json").is_file() and proc.poll() is None:
                if time.time() > deadline:
                    proc.kill()
                    return "no last/ within 120 s"
                time.sleep(POLL_S)
            if proc.poll() is not None:
                return f"the run ended (exit {proc.returncode}) before its first last/ was seen"
            proc.send_signal(signal.SIGKILL if how == "kill9" else signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
            if how == "sigterm":
                res = h.Result(proc.returncode, "", err.decode("utf-8", "replace"), 0.0)
                if "Traceback" in res.stderr or proc.returncode < 0:
                    return f"SIGTERM: exit {proc.returncode}: {res.tail()}"
        again = ctx.attnkit([*train, "--resume"], folder, timeout=300)
        if why := h.succeeded(again):
            return f"--resume: {why}"
        return weights_equal(run_dir / "last", reference)

    return run
