"""Loads the example added with spec 15's rules (nightly_report: sequential, a deadline, artifacts) on consoles
made before it."""

import importlib

from django.db import migrations

examples = importlib.import_module("forge.workflows.migrations.0002_examples")


class Migration(migrations.Migration):
    dependencies = [("forge_workflows", "0006_loop_examples")]
    operations = [migrations.RunPython(examples.load, migrations.RunPython.noop)]
