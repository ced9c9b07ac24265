"""The admin's pages of Forge's models, walked as an Admin with hostile values: each change list's search,
filters and date drill-down, its actions and editable columns, each object page with a hostile id, and
every field of every add form (JSON fields also get JSON that no database keeps). Never a 500; a control
character is refused; a refused value changes nothing.

The pages and fields come from the admin's own registry and forms, so a new model or field is walked without
a new case; a new add form needs its valid values below, or this fails. To stay quick, each add form's
values are judged by the form itself first: what it accepts is posted for real (the service and the
database get it), and what it refuses is posted once per value in every field at once (the page showing
the refusals).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib import admin
from django.forms import MultiWidget
from django.test import Client, RequestFactory
from django.urls import reverse

from forge.audit.models import AuditEvent
from tests.forge.admin_pages import staff
from tests.forge.governance.test_configuration_audit import AGENT, ENVELOPE, GATEWAY, POLICY
from tests.forge.hostile_walk import CONTROL, HOSTILE, HOSTILE_JSON, send
from tests.forge.workflows.test_step_library_admin import LIBRARY_ENTRY

pytestmark = pytest.mark.django_db

PAGES = {model: model_admin for model, model_admin in admin.site._registry.items()
         if model._meta.app_label.startswith("forge")}
SCHEDULED = "name: walked_by_schedules\nsteps:\n  - {id: a, agent: mock, command: x}\n"

# A valid add form of each model the admin adds (a function of the workflow a schedule can name).
VALID = {
    "forge_governance.agent": lambda workflow: {**AGENT.add, "name": "walked", "requires_approval": ""},
    "forge_governance.gateway": lambda workflow: {**GATEWAY.add, "name": "walked"},
    "forge_governance.budgetenvelope": lambda workflow: {**ENVELOPE.add, "name": "walked"},
    "forge_governance.policy": lambda workflow: {**POLICY.add, "name": "walked"},
    "forge_workflows.steplibraryentry": lambda workflow: {**LIBRARY_ENTRY.add, "name": "walked"},
    "forge_schedules.schedule": lambda workflow: {"workflow": str(workflow.pk), "cron": "0 3 * * *",
                                                  "timezone": "UTC", "args": "{}", "overlap": "skip",
                                                  "enabled": "on", "require_approval": "on",
                                                  "approvers": "Approvers"},
    "forge_accounts.serviceaccount": lambda workflow: {"username": "walked", "description": "walked"},
    "forge_accounts.tokenpolicy": lambda workflow: {"max_days": "30"},
}
GENERIC = ["o", "p", "all", "e", "_to_field", "_popup"]  # every change list's own parameters
OWN_FORMS = {"forge_schedules.killswitch": {"engaged": "on", "reason": "walked"}}  # a change list of its own


def label(model) -> str:
    return f"{model._meta.app_label}.{model._meta.model_name}"


def address(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def editor():
    return staff("adele", "Admins")


@pytest.fixture
def walker(editor):
    client = Client(raise_request_exception=False)  # a 500 is an answer the walk reports, with all the others
    client.force_login(editor)
    return client


@pytest.fixture
def workflow(save_workflow):
    return save_workflow(SCHEDULED).workflow


def request_of(user):
    request = RequestFactory().get("/")
    request.user = user
    return request


def add_fields(model_admin, request) -> dict[str, bool]:
    """The names an add form posts (a split widget posts one per part), each with whether it holds JSON."""
    fields = {}
    for name, field in model_admin.get_form(request).base_fields.items():
        widget = field.widget
        for suffix in (widget.widgets_names if isinstance(widget, MultiWidget) else [""]):
            fields[name + suffix] = type(field).__name__.endswith("JSONField")
    for inline in model_admin.get_inline_instances(request):  # each inline's formset posts its form counts
        prefix = inline.get_formset(request).get_default_prefix()
        fields.update({f"{prefix}-TOTAL_FORMS": False, f"{prefix}-INITIAL_FORMS": False})
    return fields


def own_parameters(model_admin, request) -> list[str]:
    """The change list's parameters that differ by model: search, filters, date drill-down."""
    parameters = ["q"] if model_admin.search_fields else []
    for spec in model_admin.get_changelist_instance(request).filter_specs:
        parameters += spec.expected_parameters()
    if model_admin.date_hierarchy:
        parameters += [f"{model_admin.date_hierarchy}__{part}" for part in ("year", "month", "day")]
    return parameters


def editable_columns(model_admin, row) -> dict[str, str]:
    """The change list's editable form of `row`, as the page posts it."""
    form = {"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-MIN_NUM_FORMS": "0",
            "form-MAX_NUM_FORMS": "1000", "form-0-id": str(row.pk), "_save": "Save"}
    for name in model_admin.list_editable:
        value = getattr(row, name)
        if value is not False:
            form[f"form-0-{name}"] = "on" if value is True else str(value)
    return form


def judge(problems: list, what: str, value_name: str, sent, *, path: bool = False) -> None:
    if sent.status >= 500:
        problems.append(f"{what} = {value_name}: {sent.status}")
    elif value_name in CONTROL and sent.status != (404 if path else 400):
        problems.append(f"{what} = {value_name}: {sent.status}, not refused")
    elif sent.changed and sent.status != 302:
        problems.append(f"{what} = {value_name}: answered {sent.status} but changed rows")
    elif sent.refused and sent.changed:
        problems.append(f"{what} = {value_name}: refused but changed rows")


def test_every_add_form_has_its_valid_values(editor, workflow):
    request = request_of(editor)
    assert {label(m) for m, a in PAGES.items() if a.has_add_permission(request)} == set(VALID)
    for model, model_admin in PAGES.items():
        if label(model) in VALID:
            assert set(add_fields(model_admin, request)) == set(VALID[label(model)](workflow)), label(model)


def test_every_change_list_of_its_own_has_its_form():
    own = {label(m) for m, a in PAGES.items() if type(a).changelist_view is not admin.ModelAdmin.changelist_view}
    assert own == set(OWN_FORMS)


def test_the_change_lists_own_parameters_take_no_hostile_value_badly(walker):
    problems = []
    for value_name, value in HOSTILE.items():
        for parameter in GENERIC:
            judge(problems, f"?{parameter}", value_name,
                  send(walker, "get", address(AuditEvent, "changelist"), {parameter: value}))
        judge(problems, "action index", value_name, send(walker, "post", address(AuditEvent, "changelist"), {
            "action": "delete_selected", "_selected_action": "1", "index": value}))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("model", sorted(PAGES, key=label), ids=label)
def test_no_hostile_value_on_a_change_list_or_object_page_is_a_500(walker, editor, workflow, model):
    model_admin, problems, request = PAGES[model], [], request_of(editor)
    if label(model) in VALID:  # a row to act on, made by the add form itself
        response = walker.post(address(model, "add"), VALID[label(model)](workflow))
        assert response.status_code == 302, response.content.decode()[:3000]
    row = model.objects.first()
    posted = [("action", {"action": "delete_selected", "_selected_action": str(row.pk) if row else "1"})]
    if model_admin.list_editable and row is not None:
        posted.append(("editable columns", editable_columns(model_admin, row)))
    if label(model) in OWN_FORMS:
        posted.append(("form", OWN_FORMS[label(model)]))
    for value_name, value in HOSTILE.items():
        for parameter in own_parameters(model_admin, request):
            judge(problems, f"?{parameter}", value_name,
                  send(walker, "get", address(model, "changelist"), {parameter: value}))
        for what, form in posted:
            for field in form:
                judge(problems, f"{what} {field}", value_name,
                      send(walker, "post", address(model, "changelist"), {**form, field: value}))
        judge(problems, "object page id", value_name,
              send(walker, "get", address(model, "change", "0").replace("/0/", f"/{quote(value, safe='')}/")),
              path=True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(VALID))
def test_no_hostile_value_in_an_add_form_is_a_500_or_saved_when_refused(walker, editor, workflow, name):
    model = next(m for m in PAGES if label(m) == name)
    model_admin, problems, request = PAGES[model], [], request_of(editor)
    form_class, valid, fields = model_admin.get_form(request), VALID[name](workflow), add_fields(model_admin, request)
    refused: dict[str, dict] = {}
    for field, is_json in fields.items():
        for value_name, value in {**HOSTILE, **(HOSTILE_JSON if is_json else {})}.items():
            data = {**valid, field: value}
            if value_name in CONTROL or form_class(data).is_valid():
                judge(problems, f"add form {field}", value_name, send(walker, "post", address(model, "add"), data))
            else:
                refused.setdefault(value_name, dict(valid))[field] = value
    for value_name, data in refused.items():
        sent = send(walker, "post", address(model, "add"), data)
        judge(problems, f"add form {', '.join(f for f in data if data[f] != valid.get(f))}", value_name, sent)
        if sent.status != 200 or "errornote" not in sent.body:
            problems.append(f"{value_name}: the form was not shown again with its errors ({sent.status})")
    assert not problems, "\n".join(problems)
