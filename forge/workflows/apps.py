from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "forge.workflows"
    label = "forge_workflows"
    verbose_name = "Workflows"
