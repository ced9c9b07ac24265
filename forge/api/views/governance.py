"""The API's governance operations (docs/design/api.md, section 5)."""

from __future__ import annotations

urlpatterns: list = []
