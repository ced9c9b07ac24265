from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "forge.api"
    label = "forge_api"
    verbose_name = "API"
