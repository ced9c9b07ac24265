from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "forge.console"
    label = "forge_console"
    verbose_name = "Console"
