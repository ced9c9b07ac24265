"""Virtual time for the runtime's leases and recovery: a worker's death is its lease running out."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone


class Clock:
    """Every `timezone.now()` returns `now`, which only moves when the test says so."""

    def __init__(self):
        self.now = timezone.now()

    def __call__(self):
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock():
    with mock.patch("django.utils.timezone.now", Clock()) as virtual:
        yield virtual
