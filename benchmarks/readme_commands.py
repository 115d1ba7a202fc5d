"""Check every ``attnkit`` command in the shell code blocks of README.md and docs/USAGE.md
(:data:`DOCUMENTS`, read in that order as one), without running it (or, with ``--run``,
run those commands).

Each command must parse with the real command line (``attnkit.cli.build_parser``); the config
file ``train`` names must exist; every path a command reads (``--model`` checkpoints,
``--resume``'s ``last``, ``--src``/``--ref``/``--tsv``, ``plot --image FILE`` and ``< FILE``
inputs) must exist in the repository or be written by an earlier command of the documents:
``attnkit demo`` (``--out``), ``attnkit train`` (its run directory's ``best``, ``last``, and
``averaged`` with checkpoint averaging), ``evaluate``, ``plot``, ``translate --attention-out``
and a shell ``> FILE``.
Commands written with placeholders (``CONFIG``, ``HOST_OF_NODE_0``) are parsed only.
``torchrun ... -m attnkit ...`` lines are checked as the ``attnkit`` command they run.

    python benchmarks/readme_commands.py          # one JSON line: commands checked, problems

Exit status 1 when a command has a problem.

``--run`` runs the documents' commands instead, in order, as written, in a scratch copy of the
repository (a temporary directory holding ``configs/`` and the files the commands read from the
repository, nothing of ``runs/``; ``attnkit`` is this tree's, run by this Python), with
``ATTNKIT_DATA_DIR`` pointing at ``../shared/data`` next to the repository when it is unset and
that exists. The commands in ``LONG`` (trainings of minutes, servers, installs, the lint gates
and the test suite, ``torchrun``) are skipped by name, each with its reason, and so is every
later command that reads what a skipped one would have written ("depends on ..."). Each command
gets ``--timeout`` seconds (default 600).

    python benchmarks/readme_commands.py --run    # one JSON line: run, skipped, failed

Exit status 1 when a command fails (its exit status and last stderr line are listed).
``tests/integration/test_readme_commands.py`` runs both modes in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: the documents whose shell blocks are checked and run, in this order (a later one may read what
#: an earlier one writes: docs/USAGE.md's commands read the README demo's ``runs/demo``)
DOCUMENTS = ("README.md", "docs/USAGE.md")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(:\d+)?$")  # CONFIG, FILE, HOST_OF_NODE_0:29400
SEPARATORS = {"&&", "||", ";", "|"}
OPERATORS = {"|", "<", ">", ">>"}  # the operators inside one step


@dataclass
class Command:
    line: int  # line of its document where it starts
    text: str  # the shell line it is part of
    argv: list[str]  # the arguments after ``attnkit``
    reads: list[str] = field(default_factory=list)  # ``< FILE``
    writes: list[str] = field(default_factory=list)  # ``> FILE``
    doc: str = "README.md"  # the document it is in


def read_documents(root: Path = ROOT) -> list[tuple[str, str]]:
    """(name, text) of each of :data:`DOCUMENTS`, in order."""
    return [(name, (root / name).read_text(encoding="utf-8")) for name in DOCUMENTS]


def _documents(readme: str | list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One text (README.md's) or (name, text) documents, as documents."""
    return [("README.md", readme)] if isinstance(readme, str) else list(readme)


def shell_lines(readme: str) -> list[tuple[int, str]]:
    """(line number, shell line) of every ```bash / ```sh block, continuations joined."""
    lines, in_block, pending, start = [], False, "", 0
    for number, raw in enumerate(readme.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("```"):
            in_block = not in_block and stripped[3:].strip() in ("bash", "sh", "shell", "console")
            continue
        if not in_block:
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append((start, pending + stripped))
        pending = ""
    return lines


@dataclass
class Step:
    """A pipeline of a README shell line (its segments joined by ``|``): what ``--run`` runs."""

    line: int  # line of its document where its shell line starts
    text: str  # that shell line
    raw: str  # the step as the document writes it, comment left out: what --run runs
    tokens: list[str]  # its words, redirections and pipes
    doc: str = "README.md"  # the document it is in

    @property
    def shell(self) -> str:
        """The step's words re-quoted, one space apart: its name in :data:`LONG`."""
        return " ".join(t if t in OPERATORS else shlex.quote(t) for t in self.tokens)

    def segments(self) -> list[list[str]]:
        """The tokens of each command of the pipeline."""
        out: list[list[str]] = [[]]
        for token in self.tokens:
            if token == "|":
                out.append([])
            else:
                out[-1].append(token)
        return [segment for segment in out if segment]


def _tokens(text: str) -> list[str]:
    """Shell words and operators (``&&``, ``|``, ``>``, ...) of ``text``, comments left out."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _name(command: str) -> str:
    """A command written as in the README, as :attr:`Step.shell` writes it."""
    return Step(0, command, command, _tokens(command)).shell


def steps(readme: str | list[tuple[str, str]]) -> list[Step]:
    """Every pipeline of every shell line of ``readme`` (README.md's text, or (name, text)
    documents read in order), in order (split at ``&&``, ``||`` and ``;``)."""
    return [
        Step(number, text, raw, _tokens(raw), doc)
        for doc, body in _documents(readme)
        for number, text in shell_lines(body)
        for raw in _split_line(text)
    ]


def _split_line(text: str) -> list[str]:
    """The text of each pipeline of a shell line, as written: split at ``&&``, ``||`` and
    ``;`` outside quotes, up to a ``#`` comment."""
    parts, start, quote, i = [], 0, "", 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"':
                i += 1  # an escaped character inside double quotes
        elif char in "'\"":
            quote = char
        elif char == "\\":
            i += 1
        elif char == "#" and (i == start or text[i - 1].isspace()):
            break
        elif text.startswith(("&&", "||"), i) or char == ";":
            parts.append(text[start:i])
            i += 1 if char == ";" else 2
            start = i
            continue
        i += 1
    parts.append(text[start:i])
    return [part.strip() for part in parts if part.strip()]


def commands(readme: str | list[tuple[str, str]]) -> list[Command | tuple[int, str, list[str]]]:
    """Every segment of every shell line, in order: a :class:`Command` for ``attnkit`` (or
    ``torchrun ... -m attnkit``), else ``(line, text, files it writes)``."""
    return [
        _segment(step.line, step.text, tokens, step.doc)
        for step in steps(readme)
        for tokens in step.segments()
    ]


def _redirections(tokens: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(words, ``< FILE`` files, ``> FILE`` and ``>> FILE`` files) of one command."""
    words, reads, writes = [], [], []
    it = iter(tokens)
    for token in it:
        if token in ("<", ">", ">>"):
            (reads if token == "<" else writes).append(next(it, ""))
        else:
            words.append(token)
    return words, reads, writes


def _segment(number: int, text: str, tokens: list[str], doc: str = "README.md"):
    words, reads, writes = _redirections(tokens)
    if words[:1] == ["attnkit"]:
        return Command(number, text, words[1:], reads, writes, doc)
    if "-m" in words and words[words.index("-m") + 1 : words.index("-m") + 2] == ["attnkit"]:
        return Command(number, text, words[words.index("-m") + 2 :], reads, writes, doc)
    return (number, text, writes)


def check(readme: str | list[tuple[str, str]]) -> tuple[int, list[str]]:
    """(attnkit commands checked, one line per problem)."""
    from attnkit.cli import build_parser

    written: set[Path] = set()
    problems: list[str] = []
    checked = 0
    for item in commands(readme):
        if not isinstance(item, Command):
            written.update(_norm(w) for w in item[2])
            continue
        checked += 1
        where = f"{item.doc}:{item.line}: attnkit {' '.join(item.argv)}"
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                args = build_parser().parse_args(item.argv)
        except SystemExit:
            problems.append(f"{where}: does not parse ({err.getvalue().strip().splitlines()[-1]})")
            continue
        if any(PLACEHOLDER.match(token) for token in item.argv):
            continue  # a template: its paths are the reader's
        reads, writes = _paths(args, problems, where)
        for path in [*reads, *item.reads]:
            if _norm(path) not in written and not (ROOT / path).exists():
                problems.append(
                    f"{where}: reads {path}, which neither exists nor is written before"
                )
        written.update(_norm(w) for w in [*writes, *item.writes])
    return checked, problems


def _paths(args: argparse.Namespace, problems: list[str], where: str) -> tuple[list, list]:
    """(paths the command reads, paths it writes) from its parsed arguments."""
    if args.command == "demo":
        from attnkit.demo import default_out

        out = args.out if args.out is not None else default_out(args.attention)
        return [], [out / "model" / "best", out / "model" / "last"]
    if args.command == "train":
        if not (ROOT / args.config).is_file():
            problems.append(f"{where}: no config file {args.config}")
            return [], []
        run = _run_dir(args)
        made = [run, run / "best", run / "last"]  # a run directory holding best/ loads as one
        data = yaml.safe_load((ROOT / args.config).read_text(encoding="utf-8"))
        if (data.get("train") or {}).get("average_checkpoints", 0) >= 2:
            made.append(run / "averaged")
        return ([run / "last"] if args.resume else []), made
    model = getattr(args, "model", None)  # attnkit serve alone, attnkit zoo: none
    models = model if isinstance(model, list) else [model] if model is not None else []
    reads = [*models, *[p for p in (getattr(args, k, None) for k in ("src", "ref", "tsv")) if p]]
    image = getattr(args, "image", None)
    if image is not None and not image.isdigit():
        reads.append(image)  # a picture file (a number is a test image)
    writes = [p for p in (getattr(args, k, None) for k in ("out", "output", "attention_out")) if p]
    if args.command == "evaluate" and args.out is None:
        from attnkit.evaluation.summary import default_eval_dir

        files = args.tsv or args.src
        writes.append(default_eval_dir(models, Path(files).name if files else args.split))
    return reads, writes


def _run_dir(args: argparse.Namespace) -> Path:
    """Where ``attnkit train`` writes: --output-dir, the (--set) output_dir, or runs/<name>."""
    if args.output_dir is not None:
        return args.output_dir
    from attnkit.config import apply_overrides

    data = apply_overrides(yaml.safe_load((ROOT / args.config).read_text()), args.overrides)
    return Path(data.get("output_dir") or Path("runs") / data.get("name", "experiment"))


def _norm(path) -> Path:
    return Path(str(path)).expanduser()


# ---- --run: the commands, run as written ----------------------------------------------------

_SERVER = "a server: it answers until stopped"
_MULTI30K = "trains on Multi30k: 7 minutes on a GPU, 90 on a CPU"
_G2P = "trains on CMUdict: 13 minutes on a GPU, 90 on a CPU"
_INSTALL = "installs packages: the run uses the environment it runs in, with this tree's attnkit"
_LINT = "a lint gate of the test command: CI runs it on the repository, not on a scratch copy"

#: The commands ``--run`` skips, as the documents write them (comments aside), and why: each
#: trains for minutes, blocks, installs, lints or is a template. A name no command of the
#: documents has is an error, so the list follows them.
LONG: dict[str, str] = {
    "pip install torch==2.13.0": _INSTALL,
    "pip install -e .": _INSTALL,
    'pip install -e ".[test]"': _INSTALL,
    "ruff check src tests benchmarks notebooks": _LINT,
    "ruff format --check src tests benchmarks notebooks": _LINT,
    "python -m pytest -q -n 2": "the whole test suite, a CI job of its own",
    'python -m pytest -q -m "not slow"': "the quick test tier: minutes of tests",
    "pip install jupytext jupyterlab": _INSTALL,
    "jupytext --to notebook notebooks/*.py": (
        "writes notebooks beside the lessons; tests/notebooks/ executes the lessons"
    ),
    "jupyter lab notebooks/": _SERVER,
    "attnkit train configs/numbers_bahdanau.yaml": "trains to early stopping, up to 8 minutes",
    "attnkit train configs/numbers_bahdanau.yaml --set train.seed=2 "
    "--output-dir runs/numbers_bahdanau-seed2": "trains to early stopping, up to 8 minutes",
    "attnkit train configs/dates_luong_general.yaml --set model.rnn=lstm --set train.lr=3e-4": (
        "trains to early stopping, up to 6 minutes"
    ),
    "attnkit train configs/dates_luong_general.yaml --overwrite": (
        "trains to early stopping, up to 6 minutes"
    ),
    "tensorboard --logdir runs": _SERVER,
    "attnkit train configs/numbers_local_p.yaml": "trains to early stopping, up to 8 minutes",
    "attnkit train configs/pointer_sort10.yaml": "trains a pointer network for 30 minutes",
    "attnkit train configs/speech_numbers_las.yaml": (
        "synthesises spoken numbers and trains Listen, Attend and Spell: minutes on a CPU"
    ),
    "attnkit train configs/speech_numbers_las.yaml --set model.kind=ctc "
    "--output-dir runs/speech_ctc": "synthesises spoken numbers and trains CTC: minutes on a CPU",
    "attnkit train configs/speech_numbers_las.yaml --set model.kind=transformer "
    "--output-dir runs/speech_tf": (
        "synthesises spoken numbers and trains the Transformer over frames: minutes on a CPU"
    ),
    "python benchmarks/speech.py --out docs/results/speech_cpu.json": (
        "the speech benchmark: three trainings at once, 20-30 minutes on a shared CPU"
    ),
    "python benchmarks/attention_cost.py --lengths 128 256 512 1024 --repeats 3 --plot cost.png": (
        "a benchmark: every attention at four lengths, each point a process of its own"
    ),
    "attnkit train configs/listops_transformer.yaml --set model.attention_impl=linear": (
        "trains 300 updates on ListOps: minutes on a CPU"
    ),
    "python benchmarks/listops.py --json listops.json --plot pareto.png": (
        "the ListOps benchmark: six trainings, about 25 minutes on a CPU"
    ),
    "python benchmarks/listops.py --config configs/numbers_transformer.yaml --impls auto explicit "
    "local --window 4 --epochs 8 --jobs 2 --set 'data.languages=[en,de]' --json numbers.json": (
        "three numbers trainings of 400 updates, two at once: minutes on a CPU"
    ),
    "python benchmarks/listops.py --config configs/numbers_long_transformer.yaml --window 32 "
    "--jobs 2 --score token --json long.json --plot long.png": (
        "six trainings on inputs of about 500 characters, two at once: tens of minutes on a CPU"
    ),
    "attnkit train configs/copyrare_copy.yaml": "trains to early stopping: 3-5 minutes on a CPU",
    "attnkit train configs/copyrare_nocopy.yaml": "trains to early stopping: 2-3 minutes on a CPU",
    "python benchmarks/copyrare.py --seeds 1 2": "the copyrare benchmark: four trainings, minutes",
    "attnkit train configs/pointer_hull10.yaml": "trains a pointer network for 6 minutes",
    "attnkit train configs/cora_gat.yaml": "reads Planetoid's Cora: a data set of its own",
    "attnkit train configs/cora_gat.yaml --set data.name=citeseer --output-dir runs/citeseer_gat": (
        "downloads Citeseer"
    ),
    "attnkit train configs/lookup_gatv2.yaml --set data.k=20": "trains for minutes on a CPU",
    "attnkit train configs/sst2_bilstm_attention.yaml": "trains on the SST for 13 minutes",
    "attnkit train configs/sst2_bilstm_none.yaml": "trains on the SST for 13 minutes",
    "attnkit train configs/sst5_bilstm_attention.yaml": "trains on the SST for 13 minutes",
    "attnkit train configs/babi_memn2n.yaml --set data.task=2": "reads bAbI: a data set of its own",
    "attnkit train configs/babi_memn2n_joint.yaml": "trains on the 20 bAbI tasks for minutes",
    "attnkit train configs/text_tsv.yaml": (
        "reads the tests' sentiment files (tests/data/text), which the scratch copy leaves out"
    ),
    "python benchmarks/babi.py --seeds 3": "the bAbI benchmark: 20 tasks x 3 seeds, over an hour",
    "attnkit faithfulness --model runs/demo/model/best --split test --count 100 --out runs/faith": (
        "100 inputs, each with 100-step adversarial searches: many minutes on a CPU"
    ),
    "attnkit train configs/ram_mnist28.yaml": "trains on MNIST for 8 minutes",
    "attnkit train configs/sat_multidigit.yaml": "trains on MNIST strips for 8 minutes",
    "attnkit train configs/attnpool_cluttered60.yaml": "trains on cluttered MNIST for 8 minutes",
    "attnkit serve --model runs/demo/model/best": _SERVER,
    "attnkit serve": _SERVER,
    "attnkit demo --attention luong-general": "trains a second demo model: a minute more",
    "attnkit serve --model runs/demo/model/best "
    "--model runs/demo-luong-general/model/best": _SERVER,
    "attnkit serve --model runs/demo/model/best --name numbers --port 8080 --max-batch 16 "
    "--max-wait-ms 10": _SERVER,
    "attnkit train configs/numbers_transformer.yaml": "trains to early stopping, up to 8 minutes",
    "attnkit train configs/dates_transformer.yaml": "trains to early stopping, up to 6 minutes",
    "attnkit train configs/g2p_transformer.yaml": _G2P,
    "attnkit train configs/multi30k_de_en_transformer.yaml": _MULTI30K,
    "attnkit train configs/multi30k_en_de_transformer.yaml": _MULTI30K,
    "attnkit train configs/multi30k_en_fr_transformer.yaml": _MULTI30K,
    "attnkit train configs/multi30k_fr_en_transformer.yaml": _MULTI30K,
    "python benchmarks/arch_compare.py --rnn configs/numbers_bahdanau.yaml "
    "--transformer configs/numbers_transformer.yaml --minutes 4 --table": (
        "trains two models for 4 minutes each"
    ),
    "python benchmarks/speed.py --arch transformer --emb 256 --layers 3 --heads 4 --ff 1024 "
    "--updates 150": "times 150 training updates of a 3-layer Transformer: minutes",
    "attnkit train configs/multi30k_en_fr.yaml": _MULTI30K,
    "attnkit train configs/multi30k_fr_en.yaml": _MULTI30K,
    "attnkit train configs/multi30k_en_de.yaml": _MULTI30K,
    "torchrun --nproc_per_node 2 -m attnkit train configs/multi30k_de_en.yaml": (
        "trains on Multi30k in 2 processes: 7 minutes on GPUs"
    ),
    "torchrun --standalone --nproc_per_node 2 -m attnkit train CONFIG": (
        "a template: CONFIG is the reader's experiment file"
    ),
    "torchrun --nnodes 2 --nproc_per_node 4 --rdzv-backend c10d "
    "--rdzv-endpoint HOST_OF_NODE_0:29400 --rdzv-id myrun -m attnkit train CONFIG": (
        "a template for several machines"
    ),
}

SHARED_DATA = ROOT.parent / "shared" / "data"


@dataclass
class Plan:
    """What ``--run`` does with each README step, decided before it runs any."""

    steps: list[tuple[Step, str | None]]  # each step and why it is skipped (None: it runs)
    inputs: list[str]  # repository files the steps read, copied into the scratch copy
    stale: list[str]  # names of ``long`` that no README command has


def plan(readme: str | list[tuple[str, str]], long: dict[str, str] = LONG) -> Plan:
    """Skip the steps named in ``long``, and every step reading what a skipped one writes."""
    reasons = {_name(command): reason for command, reason in long.items()}
    pending: dict[Path, str] = {}  # a path a skipped step would have written -> that step
    written: set[Path] = set()
    decided, inputs, seen = [], [], set()
    for step in steps(readme):
        seen.add(step.shell)
        reads, writes = _step_paths(step)
        reason = reasons.get(step.shell)
        blocker = next((pending[p] for p in map(_norm, reads) if p in pending), None)
        if reason is None and blocker is not None:
            reason = f"depends on {blocker}"
        for path in map(_norm, writes):
            if reason is None:
                pending.pop(path, None)
            else:
                pending[path] = step.raw
        if reason is None:
            inputs += [str(p) for p in reads if _norm(p) not in written and (ROOT / p).is_file()]
        written.update(map(_norm, writes))
        decided.append((step, reason))
    return Plan(decided, sorted(set(inputs)), [name for name in reasons if name not in seen])


def _step_paths(step: Step) -> tuple[list, list]:
    """(paths the step reads, paths it writes), as far as its commands say."""
    reads, writes = [], []
    for tokens in step.segments():
        item = _segment(step.line, step.text, tokens, step.doc)
        if not isinstance(item, Command):
            writes += item[2]
            reads += _redirections(tokens)[1]
            continue
        reads, writes = reads + item.reads, writes + item.writes
        if any(PLACEHOLDER.match(token) for token in item.argv):
            continue
        from attnkit.cli import build_parser

        try:
            with contextlib.redirect_stderr(io.StringIO()):
                args = build_parser().parse_args(item.argv)
        except SystemExit:
            continue  # running it says what is wrong
        more_reads, more_writes = _paths(args, [], "")
        reads, writes = reads + more_reads, writes + more_writes
    return reads, writes


@dataclass
class RunOptions:
    timeout: float = 600.0  # seconds per command
    keep: bool = False  # keep the scratch directory (its path is in the result's "workdir")
    long: dict[str, str] = field(default_factory=lambda: dict(LONG))  # commands not run
    parent: Path | None = None  # where the scratch directory is made (None: the system's temp)


def run(readme: str | list[tuple[str, str]], options: RunOptions) -> dict:
    """Run the planned steps in a scratch copy of the repository: what ran, was skipped, failed."""
    the_plan = plan(readme, options.long)
    result: dict = {"run": [], "skipped": [], "failed": []}
    result["problems"] = [
        f"LONG names {name!r}, which no README command is" for name in the_plan.stale
    ]
    top = Path(tempfile.mkdtemp(prefix="attnkit-readme-", dir=options.parent))
    repo = top / "repo"
    try:
        repo, env = _scratch(top, the_plan.inputs)
        for step, reason in the_plan.steps:
            entry = {"line": step.line, "command": step.raw}
            if step.doc != "README.md":
                entry["doc"] = step.doc
            if reason is not None:
                result["skipped"].append({**entry, "reason": reason})
                _say(f"{step.doc}:{step.line}: {step.raw}: skipped ({reason})")
                continue
            status, last, seconds = _run_step(step.raw, repo, env, options.timeout)
            _say(f"{step.doc}:{step.line}: {step.raw}: exit {status} in {seconds:.1f} s")
            if status == 0:
                result["run"].append({**entry, "seconds": round(seconds, 1)})
            else:
                result["failed"].append({**entry, "status": status, "stderr": last})
    finally:
        if options.keep:
            result["workdir"] = str(repo)
        else:
            shutil.rmtree(top, ignore_errors=True)
    return result


def _scratch(top: Path, inputs: list[str]) -> tuple[Path, dict[str, str]]:
    """``top/repo`` (configs/ and the input files) and the environment its commands run in:
    ``attnkit`` is this tree's, run by this Python (a script in ``top/bin``)."""
    repo = top / "repo"
    shutil.copytree(ROOT / "configs", repo / "configs")
    for name in inputs:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    script = top / "bin" / "attnkit"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m attnkit "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(script.parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "src"), env.get("PYTHONPATH")] if p)
    if not env.get("ATTNKIT_DATA_DIR", "").strip() and SHARED_DATA.is_dir():
        env["ATTNKIT_DATA_DIR"] = str(SHARED_DATA)
    return repo, env


def _run_step(shell: str, cwd: Path, env: dict, timeout: float) -> tuple[int | str, str, float]:
    """(exit status or why it stopped, last line of its stderr, seconds) of one bash command."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["bash", "-c", shell],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # a timeout stops the whole pipeline
    )
    try:
        _, err = proc.communicate(timeout=timeout)
        status: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        _stop(proc)
        _, err = proc.communicate()
        status = f"timed out after {timeout:g} s"
    lines = [line for line in err.splitlines() if line.strip()]
    return status, (lines[-1] if lines else ""), time.perf_counter() - start


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the step's process group (a training saves ``last``), SIGKILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--readme", type=Path, default=None, help="one file to check instead of DOCUMENTS"
    )
    ap.add_argument("--run", action="store_true", help="run the commands (see LONG for skips)")
    ap.add_argument("--timeout", type=float, default=600.0, help="--run: seconds per command")
    ap.add_argument("--keep", action="store_true", help="--run: keep the scratch directory")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    readme = (
        [(args.readme.name, args.readme.read_text(encoding="utf-8"))]
        if args.readme is not None
        else read_documents()
    )
    if args.run:
        result = run(readme, RunOptions(timeout=args.timeout, keep=args.keep))
        print(json.dumps(result, ensure_ascii=False))
        return 1 if result["failed"] or result["problems"] else 0
    checked, problems = check(readme)
    print(json.dumps({"commands": checked, "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
