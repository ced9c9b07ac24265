from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "forge.audit"
    label = "forge_audit"
    verbose_name = "Audit trail"
