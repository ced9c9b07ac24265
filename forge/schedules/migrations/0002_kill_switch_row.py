"""The kill switch's one row exists from the start, so firing can lock it (see firing._lock)."""

from django.db import migrations


def create(apps, schema_editor):
    apps.get_model("forge_schedules", "KillSwitch").objects.get_or_create(pk=1)


class Migration(migrations.Migration):
    dependencies = [("forge_schedules", "0001_initial")]
    operations = [migrations.RunPython(create, migrations.RunPython.noop)]
