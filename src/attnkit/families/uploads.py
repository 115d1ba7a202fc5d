"""An image uploaded to the server, as every family's route reads one: a multipart form whose
field ``image`` holds the file's bytes (within ``--max-image-bytes``) and whose other fields are
short strings, or a JSON body; the upload's sides checked from its header against
``--max-image-side`` before anything is decoded (:func:`check_upload`). Decoding is the API
object's (:func:`attnkit.data.image_file.rgb_from_bytes` and its kin: a PNG or JPEG, bounded,
else one InputError naming ``image``).
"""

from __future__ import annotations

import io
import json

from attnkit.errors import RequestError
from attnkit.families.serving import Limits


def is_form(request) -> bool:
    """Whether the request's body is a multipart form (an upload) rather than JSON."""
    return request.headers.get("content-type", "").startswith("multipart/form-data")


async def read_form(request, limits: Limits, fields: int = 4) -> tuple[bytes, dict[str, str]]:
    """(the bytes of the form's ``image`` file, its other fields by name), of at most
    ``fields`` fields; a RequestError naming ``image`` when there is no file or it is too big."""
    form = await request.form(max_files=1, max_fields=fields, max_part_size=limits.max_image_bytes)
    upload = form.get("image")
    if upload is None or isinstance(upload, str):
        raise RequestError(422, "image", "image: upload a PNG or JPEG file in the field 'image'")
    data = await upload.read()
    if len(data) > limits.max_image_bytes:
        raise RequestError(
            413,
            "image",
            f"image: {len(data):,} bytes, above the limit of {limits.max_image_bytes:,} "
            "(--max-image-bytes)",
        )
    others = {k: v for k, v in form.multi_items() if k != "image" and isinstance(v, str)}
    return data, others


def parse_json(body_model, raw: bytes | str, where: str = "body"):
    """``raw`` validated as ``body_model`` (strict), or FastAPI's 422 with each error's place
    under ``where`` (``body``, or the form field that held the JSON)."""
    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

    try:
        return body_model.model_validate_json(raw)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": (where, *e["loc"])} for e in exc.errors()]
        ) from None


def check_upload(data: bytes, max_side: int) -> bytes:
    """An upload within the server's ``--max-image-side`` (read from its header: a 413
    RequestError naming ``image`` above it). The API object decodes it, refusing what is no
    PNG or JPEG it can read (an InputError naming ``image``: one 422)."""
    size = _image_size(data, max_side)
    if size is not None and max(size) > max_side:
        raise RequestError(
            413,
            "image",
            f"image: {size[0]}x{size[1]} pixels, above the limit of {max_side} pixels a side "
            "(--max-image-side)",
        )
    return data


def _image_size(data: bytes, max_side: int) -> tuple[int, int] | None:
    """(width, height) from an image's header, or None when it is no image Pillow knows."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.size
    except Image.DecompressionBombError:  # Pillow refuses its header before we could ask
        raise RequestError(
            413,
            "image",
            f"image: more than {2 * Image.MAX_IMAGE_PIXELS:,} pixels, above the limit of "
            f"{max_side} pixels a side (--max-image-side)",
        ) from None
    except Exception:  # not an image: the API object says so, naming the field
        return None


def upload_body(json_schema: dict, fields: dict[str, dict]) -> dict:
    """The OpenAPI ``requestBody`` of a route that takes a JSON body (``json_schema``) or a
    multipart upload: the ``image`` file and ``fields`` (name -> schema)."""
    upload = {
        "type": "object",
        "properties": {
            "image": {"type": "string", "format": "binary", "description": "a PNG or JPEG"},
            **fields,
        },
        "required": ["image"],
    }
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": upload},
                "application/json": {"schema": json.loads(json.dumps(json_schema))},
            },
        }
    }
