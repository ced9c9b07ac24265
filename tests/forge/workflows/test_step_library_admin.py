"""Step library entries edited in the admin are audited like the rest of governance: who, before and after."""

import pytest

from forge.workflows.models import StepLibraryEntry
from tests.forge.admin_pages import AuditedAdminPages, Page

LIBRARY_ENTRY = Page(StepLibraryEntry, "library",
                     add={"name": "", "description": "fetch a report",
                          "definition": '{"agent": "mock", "command": "fetch"}'},
                     change={"definition": '{"agent": "mock", "command": "fetch again"}'},
                     bad={"definition": '["agent", "mock"]'})


@pytest.fixture
def page():
    return LIBRARY_ENTRY


class TestStepLibraryAdminPages(AuditedAdminPages):
    pass
