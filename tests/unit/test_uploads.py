"""An uploaded image, as every family's route reads it (families/uploads.py) and as the API
objects decode it (data/image_file.py's rgb_from_bytes): its sides read from the header and
refused above the server's limit before anything is decoded (a decompression bomb included), a
file that is no PNG or JPEG, or too small, one DataError naming it."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from attnkit.data.image_file import MAX_SIDE, rgb_from_bytes
from attnkit.errors import DataError, RequestError
from attnkit.families.uploads import check_upload


def picture(width: int, height: int, kind: str = "PNG") -> bytes:
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=kind)
    return buffer.getvalue()


def header_only(width: int, height: int) -> bytes:
    """A ``width`` x ``height`` PNG's header and a stub of data: all Pillow reads to open it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"IDAT", b"x")


def test_an_upload_within_the_side_limit_passes_and_one_above_is_a_413():
    data = picture(30, 20)
    assert check_upload(data, 30) is data
    assert check_upload(b"no image", 30) == b"no image"  # the API object names what it is not
    with pytest.raises(RequestError) as caught:
        check_upload(data, 29)
    assert caught.value.status == 413 and caught.value.field == "image"
    assert "30x20 pixels, above the limit of 29" in caught.value.message


def test_a_decompression_bomb_is_refused_from_its_header():
    bomb = header_only(200_000, 200_000)  # 4e10 pixels in a few bytes
    with pytest.raises(RequestError) as caught:
        check_upload(bomb, 1024)
    assert caught.value.status == 413 and "above the limit of 1024" in caught.value.message
    with pytest.raises(DataError, match="PNG or JPEG"):
        rgb_from_bytes(bomb, "image")


def test_rgb_from_bytes_decodes_a_png_or_jpeg_and_whitens_transparency():
    rgb = rgb_from_bytes(picture(24, 20), "image")
    assert rgb.mode == "RGB" and rgb.size == (24, 20)
    clear = io.BytesIO()
    Image.new("RGBA", (9, 9), (0, 0, 0, 0)).save(clear, format="PNG")
    assert np.asarray(rgb_from_bytes(clear.getvalue())).min() == 255  # transparent: white paper
    assert rgb_from_bytes(picture(12, 12, "JPEG")).size == (12, 12)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (picture(16, 16, "GIF"), "a GIF image: give a PNG or JPEG"),
        (b"not an image", "not an image Pillow can read"),
        (picture(16, 16)[:60], "cannot decode"),
        (header_only(MAX_SIDE + 1, 4), f"each side must be 1 to {MAX_SIDE}"),
    ],
)
def test_what_is_no_readable_png_or_jpeg_is_one_line_naming_it(data, says):
    with pytest.raises(DataError) as caught:
        rgb_from_bytes(data, "image")
    message = str(caught.value)
    assert message.startswith("image") and says in message and "\n" not in message
