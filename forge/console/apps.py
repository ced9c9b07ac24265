from django.apps import AppConfig

from forge.console import session_signals


class ConsoleConfig(AppConfig):
    name = "forge.console"
    label = "forge_console"
    verbose_name = "Console"

    def ready(self):
        session_signals.connect()
