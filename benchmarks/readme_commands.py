"""Check every ``attnkit`` command in README.md's shell code blocks, in order, without running it.

Each command must parse with the real command line (``attnkit.cli.build_parser``); the config
file ``train`` names must exist; every path a command reads (``--model`` checkpoints,
``--resume``'s ``last``, ``--src``/``--ref``/``--tsv`` and ``< FILE`` inputs) must exist in the
repository or be written by an earlier command of the README: ``attnkit demo`` (``--out``),
``attnkit train`` (its run directory's ``best``, ``last``, and ``averaged`` with checkpoint
averaging), ``evaluate``, ``plot``, ``translate --attention-out`` and a shell ``> FILE``.
Commands written with placeholders (``CONFIG``, ``HOST_OF_NODE_0``) are parsed only.
``torchrun ... -m attnkit ...`` lines are checked as the ``attnkit`` command they run.

    python benchmarks/readme_commands.py          # one JSON line: commands checked, problems

Exit status 1 when a command has a problem. ``tests/integration/test_readme_commands.py`` runs it
in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(:\d+)?$")  # CONFIG, FILE, HOST_OF_NODE_0:29400
SEPARATORS = {"&&", "||", ";", "|"}


@dataclass
class Command:
    line: int  # README line where it starts
    text: str  # the shell line it is part of
    argv: list[str]  # the arguments after ``attnkit``
    reads: list[str] = field(default_factory=list)  # ``< FILE``
    writes: list[str] = field(default_factory=list)  # ``> FILE``


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


def commands(readme: str) -> list[Command | tuple[int, str, list[str]]]:
    """Every segment of every shell line, in order: a :class:`Command` for ``attnkit`` (or
    ``torchrun ... -m attnkit``), else ``(line, text, files it writes)``."""
    out: list = []
    for number, text in shell_lines(readme):
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token in SEPARATORS:
                if segment:
                    out.append(_segment(number, text, segment))
                segment = []
            else:
                segment.append(token)
    return out


def _segment(number: int, text: str, tokens: list[str]):
    words, reads, writes = [], [], []
    it = iter(tokens)
    for token in it:
        if token in ("<", ">", ">>"):
            (reads if token == "<" else writes).append(next(it, ""))
        else:
            words.append(token)
    if words[:1] == ["attnkit"]:
        return Command(number, text, words[1:], reads, writes)
    if "-m" in words and words[words.index("-m") + 1 : words.index("-m") + 2] == ["attnkit"]:
        return Command(number, text, words[words.index("-m") + 2 :], reads, writes)
    return (number, text, writes)


def check(readme: str) -> tuple[int, list[str]]:
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
        where = f"README.md:{item.line}: attnkit {' '.join(item.argv)}"
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
        return [], [args.out / "model" / "best", args.out / "model" / "last"]
    if args.command == "train":
        if not (ROOT / args.config).is_file():
            problems.append(f"{where}: no config file {args.config}")
            return [], []
        run = _run_dir(args)
        made = [run / "best", run / "last"]
        data = yaml.safe_load((ROOT / args.config).read_text(encoding="utf-8"))
        if (data.get("train") or {}).get("average_checkpoints", 0) >= 2:
            made.append(run / "averaged")
        return ([run / "last"] if args.resume else []), made
    models = args.model if isinstance(args.model, list) else [args.model]
    reads = [*models, *[p for p in (getattr(args, k, None) for k in ("src", "ref", "tsv")) if p]]
    writes = [p for p in (getattr(args, k, None) for k in ("out", "output", "attention_out")) if p]
    if args.command == "evaluate" and args.out is None:
        from attnkit.evaluation.report import default_eval_dir

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    checked, problems = check(args.readme.read_text(encoding="utf-8"))
    print(json.dumps({"commands": checked, "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
