"""Payloads as the server stores them whole: at most MAX_JSON_BYTES of UTF-8 JSON each."""

from __future__ import annotations

import json
from typing import Any, Dict

#: The server's default MAX_JSON_BYTES: the most bytes of UTF-8 JSON it stores in one payload value.
DEFAULT_MAX_JSON_BYTES = 1024 * 1024

_PREVIEW_CHARS = 4096


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _truncated(text: str, size: int, max_bytes: int) -> Dict[str, Any]:
    # At most 3 bytes a character once escaped again, so the marker fits well within max_bytes.
    return {"truncated": True, "bytes": size, "preview": text[: min(_PREVIEW_CHARS, max_bytes // 8)]}


def cap_json(value: Any, max_bytes: int) -> Any:
    """``value`` when its JSON fits in ``max_bytes``; otherwise a dict keeps its members and its
    largest ones, largest first, become truncation markers until it fits (a tool message keeps
    its status and tool_call_id); anything else becomes one marker:
    ``{"truncated": True, "bytes": <its size>, "preview": <the start of its JSON text>}``.
    The server never cuts a value (it refuses it): the client does, visibly."""
    text = _text(value)
    size = _size(text)
    if size <= max_bytes:
        return value
    if isinstance(value, dict):
        capped: Dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        members = sorted(((key, _text(member)) for key, member in capped.items()), key=lambda member: -_size(member[1]))
        total = size
        for key, member_text in members:
            if total <= max_bytes:
                break
            member_size = _size(member_text)
            capped[key] = _truncated(member_text, member_size, max_bytes)
            total += _size(_text(capped[key])) - member_size
        if total <= max_bytes:
            return capped
    return _truncated(text, size, max_bytes)
