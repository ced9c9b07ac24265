from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    name = "forge.schedules"
    label = "forge_schedules"
    verbose_name = "Schedules"
