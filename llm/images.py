"""Images for vision requests: URLs pass through, files and bytes become base64 data URLs."""
from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import Sequence
from pathlib import Path

ImageSource = str | os.PathLike | bytes

# Magic numbers of the formats vision APIs accept; checked before trusting a file extension.
_SIGNATURES: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


def sniff_image_type(data: bytes) -> str | None:
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def data_url(data: bytes, mime: str | None = None) -> str:
    mime = mime or sniff_image_type(data)
    if mime is None:
        raise ValueError("image bytes are not PNG, JPEG, GIF or WebP; pass mime= explicitly")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_url(source: ImageSource) -> str:
    """An ``image_url.url`` value for an http(s)/data URL, a local file path, or raw bytes."""
    if isinstance(source, bytes | bytearray | memoryview):
        return data_url(bytes(source))
    if isinstance(source, str) and source.startswith(("http://", "https://", "data:")):
        return source
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"image is neither a URL nor an existing file: {source}")
    data = path.read_bytes()
    mime = sniff_image_type(data) or mimetypes.guess_type(path.name)[0]
    return data_url(data, mime)


def vision_message(text: str, images: Sequence[ImageSource] = (), *, detail: str | None = None) -> dict:
    """A chat ``user`` message: the text first, then one ``image_url`` part per image, in order."""
    parts: list[dict] = [{"type": "text", "text": text}]
    for source in images:
        image = {"url": image_url(source)}
        if detail:
            image["detail"] = detail
        parts.append({"type": "image_url", "image_url": image})
    return {"role": "user", "content": parts}
