"""``attnkit serve``: the JSON API and the explorer page over the Python API's models."""

from __future__ import annotations

from attnkit.cli.options import formatter, threads_option


def add_parser(sub) -> None:
    from attnkit.serve.options import add_serve_parser

    p = threads_option(add_serve_parser(sub, formatter))
    p.set_defaults(run=run)


def run(args) -> None:
    from attnkit.serve.options import settings_from_args
    from attnkit.serve.server import serve

    serve(settings_from_args(args))
