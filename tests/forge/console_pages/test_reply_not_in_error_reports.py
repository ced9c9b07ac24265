"""A reply's text is kept with its run and never logged: an error while it is posted (an error report, which
Django fills with the request's POST) shows it hidden."""

import pytest
from django.urls import reverse
from django.views.debug import SafeExceptionReporterFilter

from forge.console.views import replies
from forge.runs import services
from tests.forge.console_pages.test_reply_gate_pages import interview, pending  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def test_an_error_report_of_a_reply_post_hides_its_text(rf, interview, approver, monkeypatch):  # noqa: F811
    def fails(**_):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services, "reply_give", fails)
    approval = pending(interview)
    request = rf.post(reverse("console:reply", args=[approval.pk]), {"text": "my private answer", "place": "run"})
    request.user = approver
    with pytest.raises(RuntimeError):
        replies.reply_give(request, approval.pk)
    shown = SafeExceptionReporterFilter().get_post_parameters(request)
    assert shown["text"] != "my private answer" and shown["place"] == "run"
