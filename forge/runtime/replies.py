"""What may be said of a reply outside the run: its size and digest, never its text (the audit trail's detail)."""

from __future__ import annotations

import hashlib


def reply_detail(text: str) -> dict:
    """{"length": UTF-8 bytes, "sha256": hex digest} of a reply's text."""
    data = (text or "").encode("utf-8", "surrogatepass")
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest()}
