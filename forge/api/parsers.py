"""The API's one body parser: JSON, at most FORGE_API_MAX_BODY_BYTES (413 beyond) and nested at most
FORGE_API_MAX_JSON_DEPTH deep (400 beyond), both checked before `json.loads` sees the text."""

from __future__ import annotations

import json
import re
from itertools import accumulate

from django.conf import settings
from rest_framework.parsers import BaseParser

from forge.errors import BadRequest, TooLarge

# A string to its closing quote, or to the end when it has none (so no quote is tried twice: linear time).
STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\Z)', re.DOTALL)
NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 opening, -1 (as a signed byte) closing
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # where an unpaired one may hide: then the value is checked


def json_depth(text: bytes) -> int:
    """How deep the brackets of a JSON text nest, strings left out (a bracket in a string is no nesting)."""
    brackets = STRINGS.sub(b"", text).translate(None, NOT_BRACKETS).translate(SIGNS)
    if not brackets:
        return 0
    return max(accumulate(memoryview(brackets).cast("b")))


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.FORGE_API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise TooLarge(f"The body is {int(declared)} bytes; at most {limit} are taken.", code="body_too_large",
                           limit=limit)
        text = stream.read(limit + 1) if stream is not None else b""
        if len(text) > limit:
            raise TooLarge(f"The body is over {limit} bytes; at most {limit} are taken.", code="body_too_large",
                           limit=limit)
        most = settings.FORGE_API_MAX_JSON_DEPTH
        depth = json_depth(text) if text.count(b"[") + text.count(b"{") > most else 0
        if depth > most:
            raise BadRequest(f"The body nests {depth} deep; at most {most} is taken.",
                             code="too_deep")
        try:
            value = json.loads(text.decode("utf-8"), parse_constant=_refuse_constant)
            if SURROGATE_ESCAPE.search(text):
                json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # JSON's \ud800 alone: no text any answer, row or log could hold
            raise BadRequest("The body holds an unpaired surrogate (\\ud800 to \\udfff), which is no character.",
                             code="unparsable") from None
        except UnicodeDecodeError:
            raise BadRequest("The body is not UTF-8.", code="unparsable") from None
        except ValueError as exc:
            raise BadRequest(f"The body is not JSON: {exc}.", code="unparsable") from None
        return value
