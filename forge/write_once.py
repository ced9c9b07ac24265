"""Rows written once and never changed (audit events, workflow versions): the queryset refuses every path
Django has to rewrite them in bulk. Each model's `save` refuses changes to a saved row."""

from __future__ import annotations

from django.db import models


class WriteOnceQuerySet(models.QuerySet):
    """Refuses update, bulk_update and upserts; a subclass names the error in `refused`."""

    def refused(self) -> Exception:
        raise NotImplementedError

    def update(self, **kwargs):
        raise self.refused()

    def bulk_update(self, objs, fields, batch_size=None):
        raise self.refused()

    def bulk_create(self, objs, *args, **kwargs):
        if kwargs.get("update_conflicts"):
            raise self.refused()
        return super().bulk_create(objs, *args, **kwargs)
