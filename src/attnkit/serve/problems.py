"""Every error the API answers, in one shape: ``{"error": {"field", "message"}}``.

``field`` names what was wrong in the request (``inputs[3]``, ``beam``, ``image``; null when no
single field is to blame) and ``message`` is one line naming the field and the limit it broke.
Statuses: 422 a request that breaks the schema or a limit, 404 an unknown model or path, 413 a
body or image too large, 503 a full queue, 504 decoding that outlasted its time, 500 a bug.

A request's inputs and settings are checked by its family's API object, as in Python: what it
refuses, an :class:`~attnkit.errors.InputError` naming the input or setting (``inputs[2]``,
``n_best``, ``story``), is answered here, the one place, as a 422 naming that field. An endpoint
raises a :class:`~attnkit.errors.RequestError` only for what the server alone bounds.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from attnkit.errors import InputError, RequestError

log = logging.getLogger("attnkit.serve")


def error_response(status: int, field: str | None, message: str) -> JSONResponse:
    return JSONResponse({"error": {"field": field, "message": message}}, status_code=status)


def field_path(loc: tuple) -> str | None:
    """pydantic's error location -> ``inputs[3]``-style field name (the body itself: None)."""
    parts = [p for p in loc if p not in ("body", "query", "path")]
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or None


def validation_problem(exc: RequestValidationError) -> tuple[str | None, str]:
    """The first validation error as ``(field, one-line message)``."""
    errors = exc.errors()
    if not errors:
        return None, "invalid request"
    first = errors[0]
    kind, loc = first.get("type", ""), tuple(first.get("loc", ()))
    if kind == "json_invalid":
        where = first.get("ctx", {}).get("error", "")
        return None, f"the body is not valid JSON ({where})".replace(" ()", "")
    field = field_path(loc)
    if kind == "missing" and field is None:
        return None, "the request has no body: send a JSON object"
    if kind == "extra_forbidden":
        return field, f"{field}: not a field of this request"
    if kind == "model_attributes_type" or (kind.endswith("_type") and field is None):
        return field, "the body must be a JSON object"
    message = first.get("msg", "invalid")
    more = f" (and {len(errors) - 1} more errors)" if len(errors) > 1 else ""
    return field, f"{field or 'body'}: {message}{more}"


def install_handlers(app: FastAPI) -> None:
    """Answer every error in the API's shape."""

    @app.exception_handler(RequestError)
    async def _api_error(request: Request, exc: RequestError):
        return error_response(exc.status, exc.field, exc.message)

    @app.exception_handler(InputError)
    async def _input_error(request: Request, exc: InputError):  # the API object refused it
        return error_response(422, exc.name, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        field, message = validation_problem(exc)
        return error_response(422, field, message)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such path: {request.url.path}"
        return error_response(exc.status_code, None, message)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception):
        log.exception("error answering %s", request.url.path)  # the whole story goes to the log
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return error_response(500, None, f"internal error: {type(exc).__name__}: {first}")


class ErrorDetail(BaseModel):
    field: str | None
    message: str


class ErrorResponse(BaseModel):
    error: ErrorDetail
