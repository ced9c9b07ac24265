from django.db import migrations

BUILTIN = (
    ("mock", "mock", "Deterministic results from each step's mock block (demos, tests, dry runs)."),
    ("shell", "shell", "Runs the step's command with sh -c in the run's working directory."),
    ("python", "python", "Calls a Python function named in FORGE_PYTHON_CALLABLES."),
)


def create(apps, schema_editor):
    Agent = apps.get_model("forge_governance", "Agent")
    for name, provider, role in BUILTIN:
        Agent.objects.get_or_create(name=name, defaults={"provider": provider, "role": role[:64].split(" (")[0]})


def remove(apps, schema_editor):
    apps.get_model("forge_governance", "Agent").objects.filter(name__in=[b[0] for b in BUILTIN]).delete()


class Migration(migrations.Migration):
    dependencies = [("forge_governance", "0001_initial")]
    operations = [migrations.RunPython(create, remove)]
