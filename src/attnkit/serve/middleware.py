"""The body's bounds, enforced before a request reaches FastAPI: size, time, and a JSON body's
encoding and depth.

A body above the limit is answered 413 without being parsed: its declared Content-Length is
checked first, and a body without one (chunked) is read only up to the limit. A multipart body
sent to a route that takes uploads (an endpoint's ``uploads``: ``/v1/classify``,
``/v1/pretrained``) is allowed an image's bytes and some room for the form around it. A body
that does not arrive within ``--body-seconds`` (a client that declares 100 bytes and sends 9) is
answered 408 and its connection closed. A JSON body that is not UTF-8, or nested deeper than
:data:`MAX_JSON_DEPTH`, is answered 422 naming the problem (FastAPI would say only "400: error
parsing the body").
"""

from __future__ import annotations

import asyncio
import json
import re

from attnkit.families.serving import Limits

#: the deepest a JSON body may nest (a request is two or three levels deep)
MAX_JSON_DEPTH = 64
_OPENERS = re.compile(rb"[\[{]")

FORM_ROOM = 64 * 1024  # multipart boundaries and the other form fields around an upload


class BodyLimit:
    """ASGI middleware: 413 ``{"error": {"field": "body", ...}}`` for an over-large body."""

    def __init__(self, app, limits: Limits, uploads: tuple[str, ...] = ()):
        self.app, self.limits, self.uploads = app, limits, frozenset(uploads)

    def _limit(self, path: str, headers: dict) -> tuple[int, str]:
        form = headers.get(b"content-type", b"").startswith(b"multipart/form-data")
        if form and path in self.uploads:
            return self.limits.max_image_bytes + FORM_ROOM, "--max-image-bytes"
        return self.limits.max_body_bytes, "--max-body-bytes"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        limit, option = self._limit(scope["path"], headers)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit():  # bytes: ASCII digits only
            # a header of thousands of digits is past any limit (and past int()'s digit limit)
            size = int(declared) if len(declared) <= 18 else 10**18
            if size > limit:
                return await _too_large(send, size, limit, option)
        body, more = b"", True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.body_seconds
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                seconds = self.limits.body_seconds
                text = f"body: not received within {seconds:g} seconds (--body-seconds)"
                return await _answer(send, 408, text)
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                return await _too_large(send, len(body), limit, option)
        problem = _json_problem(body) if b"json" in headers.get(b"content-type", b"") else None
        if problem is not None:
            return await _answer(send, 422, problem)

        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect

        return await self.app(scope, replay, send)


def _json_problem(body: bytes) -> str | None:
    """What makes a JSON body unreadable before its syntax: bytes that are not UTF-8, or nesting
    deeper than :data:`MAX_JSON_DEPTH` (json would raise RecursionError); None otherwise."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"body: not UTF-8 (byte 0x{body[exc.start]:02x} at offset {exc.start})"
    if len(_OPENERS.findall(body)) > MAX_JSON_DEPTH:  # cheap: only then is the depth measured
        depth = deepest = 0
        in_string = escaped = False
        for byte in body:
            if in_string:
                escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
            elif byte == 0x22:
                in_string = True
            elif byte in (0x5B, 0x7B):
                depth += 1
                deepest = max(deepest, depth)
                if deepest > MAX_JSON_DEPTH:
                    return f"body: JSON nested deeper than {MAX_JSON_DEPTH} levels"
            elif byte in (0x5D, 0x7D):
                depth -= 1
    return None


async def _too_large(send, size: int, limit: int, option: str) -> None:
    message = f"body: {size:,} bytes or more, above the limit of {limit:,} bytes ({option})"
    await _answer(send, 413, message)


async def _answer(send, status: int, message: str) -> None:
    """``{"error": {"field": "body", "message"}}`` with ``status``; the connection is closed."""
    payload = json.dumps({"error": {"field": "body", "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
