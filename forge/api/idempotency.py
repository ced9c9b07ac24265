"""Idempotent writes (docs/design/api.md, section 5; the IETF Idempotency-Key draft).

A POST, PUT, PATCH or DELETE may carry `Idempotency-Key` (1 to 255 printable ASCII characters). Keys are the
owner's (`token:<id>`, `user:<id>` for a session, `address:<digest>` for logging in for a token). The first request with a key inserts its row, status null,
in a transaction of its own that commits before the operation runs, so a second request with the key, even one
racing it, finds the row: while the first runs, it is a 409 problem; once the first's answer is stored, the same
request (method, path and body) gets that answer again with `Idempotent-Replayed: true`, and another request a 422
problem. An answer saying "not now" (429, 5xx) is not kept: a retry is taken again. A secret the first answer showed (a token) is never kept: a replay answers null in its place. The
operation's own transaction commits before the answer is stored; a request that died between the
two leaves a row without status, met as 409 until it is 24 hours old. Older keys are ignored and pruned.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, transaction
from django.http import HttpResponse
from django.utils import timezone

from forge.api.models import IdempotencyKey
from forge.api.throttles import client_of
from forge.errors import BadRequest, Conflict, Invalid, TooLarge

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
KEPT = timedelta(hours=24)
MAX_KEY = 255
STORED_HEADERS = ("Content-Type", "Location", "ETag")
PRUNE_BATCH = 200
OWNER_DIGEST = 32  # hex characters of an address's digest: with "address:", the owner column's 40


@dataclass
class Claim:
    """The request's hold on its key: `replay` is the stored answer when it has one, else the request runs and
    its answer is stored (or, if it never gets one, the key let go)."""

    pk: int
    replay: HttpResponse | None = None

    def store(self, response: HttpResponse, secret_fields: tuple[str, ...] = ()) -> None:
        """Keep the answer for replays; each of `secret_fields` in its JSON body is kept as null: a secret is shown
        in the first answer only, and a replay says the object was made without showing it again."""
        if response.status_code >= 500 or response.status_code == 429:  # "not now": a retry may be taken again
            self.abandon()
            return
        headers = {name: response[name] for name in STORED_HEADERS if response.has_header(name)}
        IdempotencyKey.objects.filter(pk=self.pk).update(
            status=response.status_code, headers=headers, body=without_secrets(bytes(response.content), secret_fields))

    def abandon(self) -> None:
        IdempotencyKey.objects.filter(pk=self.pk, status=None).delete()


def without_secrets(body: bytes, fields: tuple[str, ...]) -> bytes:
    if not fields or not body:
        return body
    answer = json.loads(body)
    if isinstance(answer, dict):
        answer.update({name: None for name in fields if name in answer})
    return json.dumps(answer, ensure_ascii=False).encode()


def owner_of(request) -> str:
    """Whose keys the request's is: the client its rate limit counts: its token, its person (a session), else its
    address (logging in for a token, the one write open to a caller not signed in), kept as a digest: an IPv6
    address is longer than the column, and the table need not keep where people are."""
    client = client_of(request)
    kind, _, address = client.partition(":")
    if kind != "address":
        return client
    return f"address:{hashlib.sha256(address.encode()).hexdigest()[:OWNER_DIGEST]}"


def read_key(request) -> str | None:
    """The request's key, None without one; a key that is empty, too long or not printable ASCII is refused."""
    raw = request.META.get("HTTP_IDEMPOTENCY_KEY")
    if raw is None:
        return None
    if not 1 <= len(raw) <= MAX_KEY or not all(" " <= ch <= "~" for ch in raw):
        raise BadRequest(f"{HEADER} must be 1 to {MAX_KEY} printable ASCII characters.", code="bad_idempotency_key",
                         errors={HEADER: [f"1 to {MAX_KEY} printable ASCII characters."]})
    return raw


def keep_body(request) -> None:
    """Read a keyed write's raw body before authentication: a session's CSRF check parses the stream (DRF's
    `request.POST`), after which the body could no longer be read to fingerprint it."""
    if request.method in WRITES and "HTTP_IDEMPOTENCY_KEY" in request.META:
        fingerprint(request)


def fingerprint(request) -> str:
    """HMAC-SHA-256, keyed with the installation's secret key, of the request's method, path with its query and
    body: a body may hold a password (logging in for a token), and a bare hash of it could be tried against
    guesses by whoever reads the table."""
    try:
        body = request.body
    except RequestDataTooBig:
        raise TooLarge("The body is too large.", code="body_too_large") from None
    digest = hmac.new(settings.SECRET_KEY.encode(), digestmod=hashlib.sha256)
    for part in (request.method.encode(), request.get_full_path().encode("utf-8", "surrogateescape"), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def prune(now) -> None:
    """Forget up to PRUNE_BATCH keys older than a day; rows another request is pruning are skipped, not waited for
    (PostgreSQL's SKIP LOCKED; SQLite has one writer at a time)."""
    old = list(IdempotencyKey.objects.select_for_update(skip_locked=True).filter(created_at__lt=now - KEPT)
               .order_by("pk").values_list("pk", flat=True)[:PRUNE_BATCH])
    if old:
        IdempotencyKey.objects.filter(pk__in=old).delete()


def claim(request) -> Claim | None:
    """The hold on the request's key (None for a read or a request without a key)."""
    if request.method not in WRITES:
        return None
    key = read_key(request)
    if key is None:
        return None
    owner = owner_of(request)
    printed = fingerprint(request)
    now = timezone.now()
    try:
        with transaction.atomic():
            IdempotencyKey.objects.filter(owner=owner, key=key, created_at__lt=now - KEPT).delete()
            row = IdempotencyKey.objects.create(owner=owner, key=key, fingerprint=printed, created_at=now)
            prune(now)  # last: it waits on no lock, so two requests never wait on each other
        return Claim(row.pk)
    except IntegrityError:
        pass  # the key is taken: read what the first request left
    row = IdempotencyKey.objects.filter(owner=owner, key=key).first()
    if row is not None and row.fingerprint != printed:
        raise Invalid(f"This {HEADER} was used for another request; a new request needs a new key.",
                      code="idempotency_key_reused")
    if row is None or row.status is None:  # still running (or let go this instant: retrying is right either way)
        raise Conflict(f"A request with this {HEADER} is still being handled; try again when it has been answered.",
                       code="idempotency_key_in_flight")
    replay = HttpResponse(bytes(row.body), status=row.status)
    for name, value in row.headers.items():
        replay[name] = value
    replay[REPLAYED] = "true"
    return Claim(row.pk, replay=replay)
