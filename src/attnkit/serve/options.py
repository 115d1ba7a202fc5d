"""The ``attnkit serve`` command line: its options, and the settings they make.

Kept apart from the app so that ``attnkit --help`` needs neither FastAPI nor uvicorn.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from attnkit import zoo
from attnkit.families.serving import Limits

DESCRIPTION = (
    "Serve trained checkpoints over HTTP: a JSON API (/v1/translate for seq2seq models, "
    "/v1/classify for vision ones, /v1/models, /docs) and the explorer page at /, where a "
    "translation and its attention appear as you type. Requests that arrive within "
    "--max-wait-ms decode together (up to --max-batch inputs). Listens on 127.0.0.1 unless "
    "--host says otherwise; stops on SIGTERM or Ctrl-C after answering the requests in flight. "
    "docs/SERVE.md describes the API."
)


def add_serve_parser(sub, formatter) -> argparse.ArgumentParser:
    """The ``serve`` subcommand's parser, added to ``sub``."""
    p = sub.add_parser(
        "serve",
        formatter_class=formatter,
        help="serve models over HTTP: JSON API and the attention explorer page",
        description=DESCRIPTION,
        epilog="example: attnkit serve --model runs/demo/model/best  (then open the URL printed); "
        "attnkit serve alone opens a model of the zoo for each view, the first two side by side",
    )
    p.add_argument(
        "--model",
        type=zoo.checkpoint_argument,
        action="append",
        default=None,
        metavar="DIR",
        help="checkpoint directory (any family), or zoo:NAME (repeatable: each is served "
        "under its name; the first answers requests that name none). Default: "
        + " and ".join(f"zoo:{name}" for name in zoo.SIDE_BY_SIDE)
        + ", shown side by side, then "
        + ", ".join(f"zoo:{name}" for name in zoo.ONE_OF_EACH)
        + " (one for each of the other views)",
    )
    p.add_argument(
        "--name",
        action="append",
        default=[],
        help="the name of the --model at the same position (default: from its path: "
        "runs/demo/model/best is 'demo')",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free one)")
    p.add_argument(
        "--max-batch", type=int, default=32, help="inputs decoded together at most (default 32)"
    )
    p.add_argument(
        "--max-wait-ms",
        type=float,
        default=5.0,
        help="how long a request waits for others to share its batch (default 5)",
    )
    p.add_argument(
        "--no-batching",
        action="store_true",
        help="decode each request on its own (as --max-batch 1 --max-wait-ms 0)",
    )
    p.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow browser pages from ORIGIN (e.g. http://localhost:3000) to call the API "
        "(repeatable; default: none, same origin only)",
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    limits = p.add_argument_group("limits (each request; a request beyond one gets a 4xx error)")
    for f in fields(Limits):
        limits.add_argument(
            "--" + f.name.replace("_", "-"),
            type=type(f.default),
            default=f.default,
            metavar="N",
            help=f"{Limits.help(f.name)} (default {f.default})",
        )
    return p


def settings_from_args(args: argparse.Namespace):
    """The :class:`~attnkit.serve.app.ServeSettings` of parsed ``serve`` arguments."""
    from attnkit.errors import ConfigError
    from attnkit.serve.app import ServeSettings

    limits = Limits(**{f.name: getattr(args, f.name) for f in fields(Limits)})
    max_batch, max_wait = (1, 0.0) if args.no_batching else (args.max_batch, args.max_wait_ms)
    if max_batch < 1 or max_wait < 0:
        raise ConfigError("--max-batch must be >= 1 and --max-wait-ms >= 0")
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port}: must be 0 to 65535")
    models, page = list(args.model or ()), ""
    if not models:  # the zoo's, the second beside the first on the page
        models = [zoo.resolve(zoo.PREFIX + name) for name in zoo.served()]
        page = f"?second={zoo.SIDE_BY_SIDE[1]}"
    return ServeSettings(
        models=models,
        page=page,
        names=list(args.name),
        host=args.host,
        port=args.port,
        max_batch=max_batch,
        max_wait_ms=max_wait,
        cors=list(args.cors),
        limits=limits,
        device=args.device,
    )
