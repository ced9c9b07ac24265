"""What every operation's `Input` is built from: serializers that refuse a field they do not declare, so a
misspelt or stale field is a 400 problem naming it instead of being ignored."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers


class Strict:
    # A serializer mixin: a key of the body that is no writable field of the serializer is an error of its own
    # (`errors: {"colour": ["Unknown field."]}`), nested serializers included when they are Strict too.

    def to_internal_value(self, data):
        unknown = []
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(str(key) for key in data if key not in writable)
        errors = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not unknown or not isinstance(exc.detail, Mapping):
                raise
            errors.update(exc.detail)
        if unknown:
            errors.update({key: [serializers.ErrorDetail("Unknown field.", code="unknown")] for key in unknown})
            raise serializers.ValidationError(errors)
        return value


# The bases below carry comments, not docstrings: drf-spectacular describes a serializer by the first docstring
# in its classes, so an `Input` without its own would be described by its base's.
class StrictSerializer(Strict, serializers.Serializer):
    pass  # the base of an operation's `Input`


class StrictModelSerializer(Strict, serializers.ModelSerializer):
    pass  # an `Input` that reads a model's fields
