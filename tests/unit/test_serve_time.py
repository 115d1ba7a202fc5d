"""The server bounds time as well as size, over real sockets on 127.0.0.1: a connection that
sends nothing or half its headers is closed, a body that does not arrive is a 408, connections
above the cap get a 503, a non-UTF-8 or too-deep JSON body a precise 422, a busy port one line."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import uvicorn

from attnkit.errors import AttnkitError
from attnkit.families.serving import Limits
from attnkit.serve.middleware import MAX_JSON_DEPTH, BodyLimit
from attnkit.serve.server import TimedH11, listen

LIMITS = Limits(header_seconds=0.5, body_seconds=0.5, max_connections=3)


async def _echo(scope, receive, send):
    """An app that answers 200 with the length of the body it read."""
    if scope["type"] != "http":
        return
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    payload = json.dumps({"bytes": len(body)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


@pytest.fixture(scope="module")
def port():
    sock = listen("127.0.0.1", 0)
    protocol = type("Timed", (TimedH11,), {"header_seconds": LIMITS.header_seconds})
    config = uvicorn.Config(
        BodyLimit(_echo, LIMITS),
        log_level="error",
        http=protocol,
        limit_concurrency=LIMITS.max_connections,
        timeout_keep_alive=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


def _connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    return conn


def _read_all(conn: socket.socket, seconds: float = 5) -> bytes:
    """What the server sends until it closes the connection (bounded by ``seconds``)."""
    conn.settimeout(seconds)
    data = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"still open after {seconds} s (got {data[:200]!r})")


def _request(body: bytes, content_type: bytes = b"application/json", declared=None) -> bytes:
    length = len(body) if declared is None else declared
    return (
        b"POST /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: " + content_type
        + b"\r\nContent-Length: " + str(length).encode() + b"\r\n\r\n" + body
    )  # fmt: skip


def _answer(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body) if body else {}


def test_a_good_request_is_answered(port):
    conn = _connect(port)
    conn.sendall(_request(b'{"a": [1, 2]}'))
    assert _answer(_read_all(conn)) == (200, {"bytes": 13})


@pytest.mark.parametrize("sent", [b"", b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Le"])
def test_a_connection_without_its_headers_is_closed(port, sent):
    conn = _connect(port)
    conn.sendall(sent)
    t0 = time.monotonic()
    assert _read_all(conn) == b""  # closed, nothing to answer
    assert time.monotonic() - t0 < 3


def test_a_body_that_does_not_arrive_is_a_408(port):
    conn = _connect(port)
    conn.sendall(_request(b"123456789", declared=100))
    status, body = _answer(_read_all(conn))
    assert status == 408
    assert body["error"] == {
        "field": "body",
        "message": "body: not received within 0.5 seconds (--body-seconds)",
    }


def test_an_idle_connection_after_a_response_is_closed(port):
    conn = _connect(port)
    conn.sendall(b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n")  # keep-alive
    conn.settimeout(5)
    first = conn.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    conn.sendall(b"GET /x HTTP/1.1\r\nHo")  # half the next request's headers, then nothing
    assert _read_all(conn) == b""


@pytest.mark.parametrize(
    "body, needle",
    [
        (b'{"inputs": ["\xff\xfe"]}', "body: not UTF-8 (byte 0xff at offset 13)"),
        (b"[" * 50_000 + b"]" * 50_000, f"body: JSON nested deeper than {MAX_JSON_DEPTH} levels"),
    ],
)
def test_an_undecodable_or_too_deep_json_body_is_a_precise_422(port, body, needle):
    conn = _connect(port)
    conn.sendall(_request(body))
    status, answer = _answer(_read_all(conn))
    assert (status, answer["error"]["message"]) == (422, needle)


def test_brackets_inside_strings_are_not_nesting(port):
    conn = _connect(port)
    body = json.dumps({"inputs": ["[[[{{{" * 100]}).encode()
    conn.sendall(_request(body))
    assert _answer(_read_all(conn))[0] == 200


def test_connections_above_the_cap_are_answered_503(port):
    idle = [_connect(port) for _ in range(LIMITS.max_connections)]
    try:
        time.sleep(0.1)
        conn = _connect(port)
        conn.sendall(b"GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert _read_all(conn).startswith(b"HTTP/1.1 503")
    finally:
        for c in idle:
            c.close()


def test_a_busy_port_is_one_line():
    taken = listen("127.0.0.1", 0)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(AttnkitError) as err:
            listen("127.0.0.1", port)
        assert str(err.value) == (
            f"cannot listen on 127.0.0.1:{port}: Address already in use "
            "(another server has it: choose another --port)"
        )
    finally:
        taken.close()


def test_a_declared_length_of_thousands_of_digits_is_a_413_not_a_crash():
    """int() refuses more than 4,300 digits: the header is past any limit, and said so."""
    import asyncio

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": "/v1/translate", "headers": [(b"content-length", b"9" * 5000)]}
    asyncio.run(BodyLimit(_echo, LIMITS)(scope, receive, send))
    assert sent[0]["status"] == 413
    message = json.loads(sent[1]["body"])["error"]["message"]
    assert message.startswith("body: 1,000,000,000,000,000,000 bytes or more, above the limit")
