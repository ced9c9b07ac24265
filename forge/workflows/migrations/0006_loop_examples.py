"""Loads the examples added since 0002 (code_review, interview: seed 002's loops) on consoles made before them."""

import importlib

from django.db import migrations

examples = importlib.import_module("forge.workflows.migrations.0002_examples")


class Migration(migrations.Migration):
    dependencies = [("forge_workflows", "0005_version_author_protected")]
    operations = [migrations.RunPython(examples.load, migrations.RunPython.noop)]
