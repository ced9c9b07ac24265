"""Loads the example workflows shipped in examples/ so a new console has something to run."""

import hashlib

import yaml
from django.conf import settings
from django.db import migrations


def load(apps, schema_editor):
    Workflow = apps.get_model("forge_workflows", "Workflow")
    Version = apps.get_model("forge_workflows", "WorkflowVersion")
    for path in sorted((settings.BASE_DIR / "examples").glob("*.yaml")):
        source = path.read_text(encoding="utf-8")
        document = yaml.safe_load(source)
        workflow, _ = Workflow.objects.get_or_create(
            name=document["name"], defaults={"description": document.get("description") or ""})
        digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
        if not Version.objects.filter(workflow=workflow, content_hash=digest).exists():
            number = Version.objects.filter(workflow=workflow).count() + 1
            Version.objects.create(workflow=workflow, number=number, source=source, content_hash=digest)


class Migration(migrations.Migration):
    dependencies = [("forge_workflows", "0001_initial")]
    operations = [migrations.RunPython(load, migrations.RunPython.noop)]
