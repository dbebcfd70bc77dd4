"""Payloads as the server stores them whole: at most MAX_JSON_BYTES of UTF-8 JSON each, and at
most 1.5 times that as stored (PostgreSQL writes every number out in full)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any, Dict, List, Tuple, cast

#: The server's default MAX_JSON_BYTES: the most bytes of UTF-8 JSON it stores in one payload value.
DEFAULT_MAX_JSON_BYTES = 1024 * 1024

_PREVIEW_CHARS = 4096


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _number_lengths(number: float) -> Tuple[int, int]:
    """A float's length as JavaScript writes it (the server's JSON), and written out in full, as
    the server stores it (1e308 is 309 digits). The same shortest digits as Python's repr."""
    if number == 0:
        return 1, 1  # -0.0 too: JavaScript writes it 0
    digits = Decimal(repr(number)).normalize()
    full = format(digits, "f")
    if 1e-6 <= abs(number) < 1e21:
        return len(full), len(full)
    sign, mantissa, _ = digits.as_tuple()
    written = sign + len(mantissa) + (1 if len(mantissa) > 1 else 0) + 2 + len(str(abs(digits.adjusted())))
    return written, len(full)


def _extra(value: Any) -> Tuple[int, int]:
    """How many bytes longer than Python's compact JSON ``value`` is as the server measures it:
    as JavaScript writes it (floats: ``1e-05`` is ``0.00001``), and then as stored (a space after
    every ``,`` and ``:``, numbers in full)."""
    if isinstance(value, float):
        written, full = _number_lengths(value)
        return written - len(_text(value)), full - written
    items: List[Any]
    if isinstance(value, dict):
        items = list(cast(Dict[Any, Any], value).values())
        separators = 2 * len(items) - 1
    elif isinstance(value, (list, tuple)):
        items = list(cast(List[Any], value))
        separators = len(items) - 1
    else:
        return 0, 0
    written, stored = 0, max(0, separators)
    for item in items:
        item_written, item_stored = _extra(item)
        written += item_written
        stored += item_stored
    return written, stored


def _sizes(text: str, value: Any) -> Tuple[int, int]:
    """``value``'s size as the server checks it: its compact JSON, and its text as stored."""
    written, stored = _extra(value)
    size = _size(text) + written
    return size, size + stored


def _truncated(text: str, size: int, max_bytes: int) -> Dict[str, Any]:
    # At most 3 bytes a character once escaped again, so the marker fits well within max_bytes.
    return {"truncated": True, "bytes": size, "preview": text[: min(_PREVIEW_CHARS, max_bytes // 8)]}


# A NUL, and a surrogate that is not half of a pair (a pair, as two code points, is JSON's escape of one character).
_UNSTORABLE = re.compile("\x00|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


def storable(value: Any) -> Any:
    """``value`` with each character the server cannot store (a NUL, an unpaired surrogate), in a
    string or a key, replaced by U+FFFD, as the TypeScript client does: a payload holding one is
    refused whole, and with it every event that repeats it (a model call whose prompt holds a
    tool's binary output, and the calls it declares)."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {storable(key): storable(member) for key, member in cast(Dict[Any, Any], value).items()}
    if isinstance(value, (list, tuple)):
        return [storable(item) for item in cast(List[Any], value)]
    return value


def cap_json(value: Any, max_bytes: int) -> Any:
    """``value`` when its JSON fits in ``max_bytes``, and in 1.5 times that as the server stores
    it (numbers written out in full); otherwise a dict keeps its members and its largest ones,
    largest first, become truncation markers until it fits (a tool message keeps its status and
    tool_call_id); anything else becomes one marker:
    ``{"truncated": True, "bytes": <its size>, "preview": <the start of its JSON text>}``.
    The server never cuts a value (it refuses it): the client does, visibly."""
    max_stored = max_bytes * 3 // 2

    def fits(size: int, stored: int) -> bool:
        return size <= max_bytes and stored <= max_stored

    text = _text(value)
    size, stored = _sizes(text, value)
    if fits(size, stored):
        return value
    if isinstance(value, dict):
        capped: Dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        members = [(key, _text(member), member) for key, member in capped.items()]
        measured = sorted(((key, member_text, *_sizes(member_text, member)) for key, member_text, member in members), key=lambda member: -member[3])
        total, total_stored = size, stored
        for key, member_text, member_size, member_stored in measured:
            if fits(total, total_stored):
                break
            capped[key] = _truncated(member_text, member_size, max_bytes)
            marker_size, marker_stored = _sizes(_text(capped[key]), capped[key])
            total += marker_size - member_size
            total_stored += marker_stored - member_stored
        if fits(total, total_stored):
            return capped
    return _truncated(text, size, max_bytes)
