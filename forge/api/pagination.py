"""Cursor pages (docs/design/api.md, section 5): `?limit=` (default 50, at most 200) items in a fixed order (the
newest id first by default), and `next`/`previous` links whose `cursor` is opaque: the key of the edge item,
signed, so a cursor made or changed by hand is a 400 problem rather than a page of something else."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet
from rest_framework.pagination import BasePagination
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from forge.errors import BadRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
SALT = "forge.api.cursor"


def read_limit(request) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}.", code="bad_limit",
                         errors={"limit": [f"A whole number from 1 to {MAX_LIMIT}."]})
    return int(raw)


class CursorPagination(BasePagination):
    """Keyset pages of a queryset ordered by `ordering` (fields of the model, never null, `-` for
    descending; the last unique, as `id` is)."""

    cursor_query_param = "cursor"
    limit_query_param = "limit"

    def __init__(self, ordering: Sequence[str] = ("-id",)):
        self.ordering = tuple(ordering)

    # -- the cursor ----------------------------------------------------------------------------------

    def _encode(self, item: Any, backwards: bool) -> str:
        key = [_plain(getattr(item, name.lstrip("-"))) for name in self.ordering]
        return signing.dumps({"o": self.ordering, "k": key, "b": backwards}, salt=SALT, compress=True)

    def _decode(self, raw: str, model) -> tuple[list[Any], bool]:
        bad = BadRequest("The cursor is not one this list gave.", code="bad_cursor",
                         errors={"cursor": ["Not a cursor this list gave."]})
        try:
            found = signing.loads(raw, salt=SALT)
        except signing.BadSignature:
            raise bad from None
        if not isinstance(found, dict) or tuple(found.get("o") or ()) != self.ordering:
            raise bad
        try:
            key = [model._meta.get_field(name.lstrip("-")).to_python(value)
                   for name, value in zip(self.ordering, found["k"], strict=True)]
        except Exception:  # a signed cursor of an older shape: refused like a forged one
            raise bad from None
        return key, bool(found.get("b"))

    def _beyond(self, key: list[Any], backwards: bool) -> Q:
        """The rows after `key` in the order (before it when `backwards`): a lexicographic keyset condition."""
        alternatives = []
        equal = Q()
        for name, value in zip(self.ordering, key):
            field = name.lstrip("-")
            descending = name.startswith("-") != backwards
            alternatives.append(equal & Q(**{f"{field}__{'lt' if descending else 'gt'}": value}))
            equal &= Q(**{field: value})
        return reduce(operator.or_, alternatives)

    # -- a page --------------------------------------------------------------------------------------

    def paginate(self, queryset: QuerySet, request) -> tuple[list[Any], str | None, str | None]:
        """The page's items and the links to the next and previous pages (None at either end)."""
        limit = read_limit(request)
        raw = request.query_params.get(self.cursor_query_param)
        key, backwards = self._decode(raw, queryset.model) if raw is not None else (None, False)
        order = [_flip(name) for name in self.ordering] if backwards else list(self.ordering)
        rows = queryset.order_by(*order)
        if key is not None:
            rows = rows.filter(self._beyond(key, backwards))
        items = list(rows[:limit + 1])
        more = len(items) > limit
        items = items[:limit]
        if backwards:
            items.reverse()
        url = request.build_absolute_uri()
        after = more if not backwards else key is not None
        before = key is not None if not backwards else more
        next_link = self._link(url, items[-1], False) if items and after else None
        previous_link = self._link(url, items[0], True) if items and before else None
        return items, next_link, previous_link

    def _link(self, url: str, item: Any, backwards: bool) -> str:
        return replace_query_param(url, self.cursor_query_param, self._encode(item, backwards))

    # -- DRF's pagination interface, read by the schema ------------------------------------------------

    def paginate_queryset(self, queryset, request, view=None):
        self._page = self.paginate(queryset, request)
        return self._page[0]

    def get_paginated_response(self, data):
        return Response({"results": data, "next": self._page[1], "previous": self._page[2]})

    def get_paginated_response_schema(self, schema):
        link = {"type": ["string", "null"], "format": "uri"}
        return {"type": "object", "required": ["results", "next", "previous"],
                "properties": {"results": schema, "next": link, "previous": link}}

    def get_schema_operation_parameters(self, view):
        return [
            {"name": "cursor", "required": False, "in": "query", "schema": {"type": "string"},
             "description": "The page to answer: a `next` or `previous` link's cursor."},
            {"name": "limit", "required": False, "in": "query",
             "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
             "description": "How many items a page holds."},
        ]


def _flip(name: str) -> str:
    return name[1:] if name.startswith("-") else "-" + name


def _plain(value: Any) -> Any:
    """A key value as JSON holds it (the model field's `to_python` reads it back)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)

