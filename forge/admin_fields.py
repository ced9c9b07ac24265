"""Form fields the admin's Forge forms share."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput

from forge.governance.validators import kept_json


class KeptJSONField(forms.JSONField):
    """JSON that both databases keep. What json.loads reads but a column refuses (NaN, Infinity, a NUL or an
    unpaired surrogate, an integer beyond 64 bits), or what the parser cannot read at all (nesting that
    exhausts it, an integer of more digits than int() reads), is a form error rather than a 500."""

    def to_python(self, value):
        try:
            converted = super().to_python(value)
        except RecursionError:
            raise ValidationError("the JSON would nest too deeply to be read") from None
        except ValueError as exc:  # not a JSONDecodeError, which the parent reports: too many digits
            raise ValidationError(f"this is not JSON that can be read: {str(exc)[:120]}") from None
        kept_json(converted)
        return converted

    def bound_data(self, data, initial):
        try:
            self.to_python(data)
        except ValidationError:
            return InvalidJSONInput(data)  # shown again as typed: parsed, it may not even be printable
        return super().bound_data(data, initial)
