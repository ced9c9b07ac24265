from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "forge.governance"
    label = "forge_governance"
    verbose_name = "Governance"
