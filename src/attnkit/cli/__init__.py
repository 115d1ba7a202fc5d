"""The ``attnkit`` command (also ``python -m attnkit``): thin shells over the Python API.

One module per command (demo, train, translate, evaluate, plot, explain, faithfulness, serve,
zoo), each with ``add_parser(sub)`` and ``run(args)``; :mod:`attnkit.cli.options` defines the
shared options. Errors a user can cause print one line ``attnkit: error: ...`` and exit with
status 2; a setting the API object refuses (an :class:`~attnkit.errors.InputError` naming
``n_best``) is named by the option that gave it (``--n-best``): the command checks nothing the
API object checks. Training stopped by Ctrl-C or SIGTERM saves ``last``, prints one line
``attnkit: interrupted: ...`` and exits with 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import argparse
import errno
import sys
import warnings

from attnkit import __version__
from attnkit.cli import demo, evaluate, explain, faithfulness, plot, serve, train, translate, zoo
from attnkit.cli.options import formatter
from attnkit.errors import AttnkitError, InputError, TrainingInterrupted, file_error

#: the commands, in the order ``attnkit --help`` lists them
COMMANDS = (demo, train, translate, evaluate, plot, explain, faithfulness, serve, zoo)


#: what a file or directory of the user's can do to a write (or a read): a one-line error naming it
FILE_ERRORS = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EFBIG,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EEXIST,
    errno.ENOENT,
    errno.ELOOP,
    errno.ENAMETOOLONG,
    errno.EIO,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnkit",
        formatter_class=formatter,
        description="Train, compare and see attention models: RNN seq2seq with Bahdanau, Luong "
        "(dot, general, concat), scaled dot-product and multi-head attention, or none; visual "
        "soft and hard attention.",
        epilog="Run 'attnkit COMMAND --help' for the options of each command. In Python: "
        "import attnkit; attnkit.load(DIR) (docs/API.md).",
    )
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def option_error(exc: InputError, argv: list[str]) -> str:
    """The API object's message, led by the option of ``argv`` that gave the setting it refused
    (``--n-best: ...`` for ``n_best``); as it is where no option did."""
    flag = "--" + exc.name.replace("_", "-")
    given = any(a == flag or a.startswith(f"{flag}=") for a in argv)
    return f"{flag}: {exc}" if given else str(exc)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    formatwarning = warnings.formatwarning
    warnings.formatwarning = lambda msg, cat, *a, **k: f"attnkit: warning: {msg}\n"
    try:
        if hasattr(args, "threads"):  # translate, evaluate, plot, explain, serve
            from attnkit.device import set_threads

            set_threads(args.threads)
        args.run(args)
    except TrainingInterrupted as exc:
        # one write per line: stderr on a pipe writes through, and print() writes the text and
        # its newline apart, so the lines of two torchrun ranks could run into each other
        sys.stderr.write(f"attnkit: interrupted: {exc}\n")
        return exc.exit_status
    except InputError as exc:
        sys.stderr.write(f"attnkit: error: {option_error(exc, [str(a) for a in argv])}\n")
        return 2
    except AttnkitError as exc:
        sys.stderr.write(f"attnkit: error: {exc}\n")
        return 2
    except OSError as exc:
        if exc.errno not in FILE_ERRORS or exc.filename is None:
            raise  # not a file the user named or a disk they gave: a bug, with its traceback
        sys.stderr.write(f"attnkit: error: {file_error(exc.filename, exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("attnkit: interrupted\n")
        return 130
    finally:
        warnings.formatwarning = formatwarning
    return 0


if __name__ == "__main__":
    sys.exit(main())
