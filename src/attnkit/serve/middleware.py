"""The body size limit, enforced before a request reaches FastAPI.

A body above the limit is answered 413 without being parsed: its declared Content-Length is
checked first, and a body without one (chunked) is read only up to the limit. The upload route
(``/v1/classify``) is allowed an image's bytes and some room for the form around it.
"""

from __future__ import annotations

import json

from attnkit.serve.limits import Limits

FORM_ROOM = 64 * 1024  # multipart boundaries and the other form fields around an upload
UPLOAD_PATHS = ("/v1/classify",)


class BodyLimit:
    """ASGI middleware: 413 ``{"error": {"field": "body", ...}}`` for an over-large body."""

    def __init__(self, app, limits: Limits):
        self.app, self.limits = app, limits

    def _limit(self, path: str) -> tuple[int, str]:
        if path in UPLOAD_PATHS:
            return self.limits.max_image_bytes + FORM_ROOM, "--max-image-bytes"
        return self.limits.max_body_bytes, "--max-body-bytes"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit, option = self._limit(scope["path"])
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _too_large(send, int(declared), limit, option)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                return await _too_large(send, len(body), limit, option)

        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect

        return await self.app(scope, replay, send)


async def _too_large(send, size: int, limit: int, option: str) -> None:
    message = f"body: {size:,} bytes or more, above the limit of {limit:,} bytes ({option})"
    payload = json.dumps({"error": {"field": "body", "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
