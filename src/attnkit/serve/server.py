"""Run the app under uvicorn: the startup line, the warning for a non-local host, the drain.

uvicorn handles SIGTERM and SIGINT with a graceful shutdown: it stops accepting connections,
lets the requests in flight finish (their decoding included: they wait on the batcher, which
stops only after them), then ends the app's lifespan and returns. After SIGTERM the command
exits 0; after Ctrl-C, 130 as every attnkit command.
"""

from __future__ import annotations

import ipaddress
import signal
import sys

import uvicorn

from attnkit.errors import AttnkitError
from attnkit.serve.app import ServeSettings, create_app
from attnkit.serve.models import load_models

LOCAL_NAMES = ("localhost",)
DRAIN_EXTRA_S = 5.0  # beyond the decoding limit, for the answers to go out


def is_local(host: str) -> bool:
    """Whether only this machine can reach ``host``."""
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Server(uvicorn.Server):
    """uvicorn's server that prints one line once it listens (the port it got, for --port 0)."""

    def __init__(self, config: uvicorn.Config, names: list[str], page: str = ""):
        super().__init__(config)
        self.names, self.page = names, page

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        host = self.config.host
        port = self.servers[0].sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        print(
            f"attnkit serve: http://{shown}:{port}/{self.page} (models: {', '.join(self.names)})",
            flush=True,
        )


def _drained(signum, frame) -> None:
    """SIGTERM after uvicorn's graceful shutdown: nothing left to do."""


def serve(settings: ServeSettings) -> None:
    """Load the models, then answer requests until SIGTERM or Ctrl-C."""
    served = load_models(settings.models, settings.names, settings.device)
    app = create_app(settings, served)
    if not is_local(settings.host):
        print(
            f"attnkit: warning: --host {settings.host}: the server is reachable from other "
            "machines; it has no authentication (use 127.0.0.1 unless you mean it)",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=settings.limits.decode_seconds + DRAIN_EXTRA_S,
        server_header=False,
    )
    server = _Server(config, list(served), settings.page)
    # uvicorn drains on SIGTERM, then raises the signal again for the handler it found: this
    # one, so that a drained shutdown ends the command with status 0
    previous = signal.signal(signal.SIGTERM, _drained)
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise AttnkitError(f"cannot listen on {settings.host}:{settings.port}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not server.started:
        raise AttnkitError(f"cannot listen on {settings.host}:{settings.port}")
