"""The API's events operations (docs/design/api.md, section 5)."""

from __future__ import annotations

urlpatterns: list = []
