from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "forge.governance"
    label = "forge_governance"
    verbose_name = "Governance"

    def ready(self):
        from forge.governance import checks  # noqa: F401  (registers the checks)
