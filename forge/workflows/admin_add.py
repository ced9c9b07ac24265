"""Django admin's *Add workflow*: a workflow comes with its first version or not at all. The YAML pasted in the
form is validated by the engine (every problem shown on the form with its line) and saved through the
workflows service, which creates the workflow and its v1 in one transaction and audits it."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from forge.workflows.models import Workflow
from forge.workflows.services import MAX_SOURCE_BYTES, workflow_validate

SHOWN_PROBLEMS = 20  # a document can have thousands; the form shows the first ones and says how many more


class WorkflowAddForm(forms.ModelForm):
    source = forms.CharField(
        label="Workflow (YAML)", strip=False, widget=forms.Textarea(attrs={"rows": 24, "cols": 100}),
        max_length=MAX_SOURCE_BYTES,  # characters; the service also bounds the bytes
        help_text="The whole document, as `forge run` takes it: its name and description become the workflow's, "
                  "and it is saved as version 1.")

    class Meta:
        model = Workflow
        fields = ()

    def clean_source(self) -> str:
        source = self.cleaned_data["source"]
        report = workflow_validate(source=source)
        if not report.valid:
            problems = [ValidationError(said(problem)) for problem in report.problems[:SHOWN_PROBLEMS]]
            if len(report.problems) > SHOWN_PROBLEMS:
                problems.append(ValidationError(f"and {len(report.problems) - SHOWN_PROBLEMS} more problems"))
            raise ValidationError(problems)
        self.warnings = report.warnings  # shown once it is added: the document is valid, they do not stop it
        name = report.workflow.document.name
        if Workflow.objects.filter(name=name).exists():
            raise ValidationError(f"a workflow named {name!r} exists already: a new version of it is saved from "
                                  "the console or with `forge run`, not added here")
        return source


def said(problem) -> str:
    where = f"line {problem.line}" + (f", column {problem.column}" if problem.column else "") if problem.line else ""
    step = f"step {problem.step!r}: " if problem.step else ""
    return f"{where}: {step}{problem.message}" if where else f"{step}{problem.message}"
