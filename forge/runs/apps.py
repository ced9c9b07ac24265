from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "forge.runs"
    label = "forge_runs"
    verbose_name = "Runs"

    def ready(self):
        from forge.runs import checks  # noqa: F401  (registers the checks)
