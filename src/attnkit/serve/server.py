"""Run the app under uvicorn: the startup line, the warning for a non-local host, the drain.

uvicorn handles SIGTERM and SIGINT with a graceful shutdown: it stops accepting connections,
lets the requests in flight finish (their decoding included: they wait on the batcher, which
stops only after them), then ends the app's lifespan and returns. After SIGTERM the command
exits 0; after Ctrl-C, 130 as every attnkit command.

Time is bounded as well as size: a connection must send a request's headers within
``--header-seconds`` (:class:`TimedH11`: a connection that sends nothing, or half a set of
headers, is closed), and its body within ``--body-seconds`` (:mod:`attnkit.serve.middleware`);
``--max-connections`` caps connections and requests at once (uvicorn's ``limit_concurrency``:
more are answered 503). attnkit binds the port itself, so a busy port is one line of its own.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import signal
import socket
import sys

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from attnkit.errors import AttnkitError
from attnkit.serve.app import ServeSettings, create_app
from attnkit.serve.models import load_models

LOCAL_NAMES = ("localhost",)
DRAIN_EXTRA_S = 5.0
BUSY = errno.EADDRINUSE  # beyond the decoding limit, for the answers to go out


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


class TimedH11(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request headers do not arrive
    within :attr:`header_seconds` of its opening or of the previous response."""

    header_seconds = 10.0

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._waiting_for = None  # the cycle of the request answered last
        self._header_timer = self.loop.call_later(self.header_seconds, self._header_timeout)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not self._waiting_for and self._header_timer is not None:
            self._header_timer.cancel()  # a new request's headers are in
            self._header_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._waiting_for = self.cycle
            if self._header_timer is not None:
                self._header_timer.cancel()
            self._header_timer = self.loop.call_later(self.header_seconds, self._header_timeout)

    def connection_lost(self, exc) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.cycle is self._waiting_for and not self.transport.is_closing():
            self.transport.close()  # no request arrived in time: nothing to answer


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; AttnkitError in one line when it cannot be had (a
    busy port, an address not of this machine)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        family = infos[0][0]
        sock = socket.create_server((host.strip("[]"), port), family=family, backlog=2048)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        busy = " (another server has it: choose another --port)" if exc.errno == BUSY else ""
        raise AttnkitError(f"cannot listen on {host}:{port}: {reason}{busy}") from None
    sock.set_inheritable(True)
    return sock


def _drained(signum, frame) -> None:
    """SIGTERM after uvicorn's graceful shutdown: nothing left to do."""


def serve(settings: ServeSettings) -> None:
    """Load the models, then answer requests until SIGTERM or Ctrl-C."""
    sock = listen(settings.host, settings.port)  # a busy port: said before the models load
    served = load_models(settings.models, settings.names, settings.device)
    app = create_app(settings, served)
    if not is_local(settings.host):
        print(
            f"attnkit: warning: --host {settings.host}: the server is reachable from other "
            "machines; it has no authentication (use 127.0.0.1 unless you mean it)",
            file=sys.stderr,
            flush=True,
        )
    limits = settings.limits
    protocol = type("TimedH11", (TimedH11,), {"header_seconds": limits.header_seconds})
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=limits.decode_seconds + DRAIN_EXTRA_S,
        server_header=False,
        http=protocol,
        limit_concurrency=limits.max_connections,
        timeout_keep_alive=min(5, limits.header_seconds),
    )
    server = _Server(config, list(served), settings.page)
    # uvicorn drains on SIGTERM, then raises the signal again for the handler it found: this
    # one, so that a drained shutdown ends the command with status 0
    previous = signal.signal(signal.SIGTERM, _drained)
    try:
        server.run(sockets=[sock])
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise AttnkitError(f"cannot listen on {settings.host}:{settings.port}") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not server.started:
        raise AttnkitError(f"cannot listen on {settings.host}:{settings.port}")
