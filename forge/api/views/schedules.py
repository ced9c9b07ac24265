"""The API's schedules and kill switch operations (docs/design/api.md, section 5): list, add, read, change, pause,
resume and delete a schedule, read and set the kill switch, through forge/schedules/services.py and selectors.py
as the console, the admin and `forge schedule` call them."""

from __future__ import annotations

from contextlib import contextmanager

from django.urls import path

from forge.api.base import ApiView
from forge.api.fields import restore_redacted
from forge.api.routes import by_method
from forge.api.serializers_schedules import KillSwitchIn, KillSwitchOut, ScheduleChangeIn, ScheduleIn, ScheduleOut
from forge.errors import NotFound
from forge.filters import filtered
from forge.schedules import services
from forge.schedules.filters import ScheduleFilter
from forge.schedules.models import Schedule
from forge.schedules.selectors import kill_switch, schedules_for_user

READ, MANAGE = "run.view", "schedule.manage"  # who sees schedules on the workflows' pages; who changes them
LISTED = ("workflow", "owner")


@contextmanager
def refusals():
    """A schedule service's refusal as its problem (forge.errors' table), with `errors` by field beside the
    `field` it names, as a body's refused fields are said."""
    try:
        yield
    except services.ScheduleRejected as exc:
        if exc.field and "errors" not in exc.extra:
            exc.extra["errors"] = {exc.field: [exc.message]}
        raise


def schedule_of(request, pk: int) -> Schedule:
    schedule = schedules_for_user(request.user).select_related(*LISTED).filter(pk=pk).first()
    if schedule is None:
        raise NotFound(f"There is no schedule {pk}.", code="no_such_schedule")
    return schedule


def fresh(schedule: Schedule) -> Schedule:
    return Schedule.objects.select_related(*LISTED).get(pk=schedule.pk)


class ScheduleListApi(ApiView):
    """The schedules, oldest first (as `forge schedules` lists them), filtered by workflow, owner and enabled."""

    action = READ
    paged = True
    ordering = ("id",)
    Output = ScheduleOut

    def get(self, request):
        schedules = schedules_for_user(request.user).select_related(*LISTED)
        return self.page(filtered(ScheduleFilter, request.query_params, schedules))


class ScheduleAddApi(ApiView):
    """Add a schedule owned by the person, whose runs start with their permissions (forge.schedule.added)."""

    action = MANAGE
    Output = ScheduleOut
    success_status = 201

    class Input(ScheduleIn):
        pass

    def post(self, request):
        data = self.read(request)
        with refusals():
            schedule = services.schedule_add(user=request.user, **data)
        return self.answer(fresh(schedule))


class ScheduleGetApi(ApiView):
    action = READ
    Output = ScheduleOut

    def get(self, request, pk: int):
        return self.answer(schedule_of(request, pk))


class ScheduleChangeApi(ApiView):
    """Change what a schedule runs or when (forge.schedule.changed); the person becomes its owner."""

    action = MANAGE
    Output = ScheduleOut

    class Input(ScheduleChangeIn):
        pass

    def patch(self, request, pk: int):
        schedule = schedule_of(request, pk)
        data = dict(self.read(request, partial=True))
        if "args" in data:  # an argument answered redacted and sent back as it was keeps its value
            data["args"] = restore_redacted(data["args"], schedule.args)
        with refusals():
            changed = services.schedule_update(user=request.user, schedule=schedule, **data)
        return self.answer(fresh(changed))


class SchedulePauseApi(ApiView):
    """Stop a schedule firing; a due time queued behind a run in flight is dropped (409 when already paused)."""

    action = MANAGE
    Output = ScheduleOut

    def post(self, request, pk: int):
        with refusals():
            schedule = services.schedule_pause(user=request.user, schedule=schedule_of(request, pk))
        return self.answer(fresh(schedule))


class ScheduleResumeApi(ApiView):
    """Let a paused schedule fire again from its next cron time (409 when not paused)."""

    action = MANAGE
    Output = ScheduleOut

    def post(self, request, pk: int):
        with refusals():
            schedule = services.schedule_resume(user=request.user, schedule=schedule_of(request, pk))
        return self.answer(fresh(schedule))


class ScheduleDeleteApi(ApiView):
    """Remove a schedule and its fire records; the runs it started go on."""

    action = MANAGE
    success_status = 204

    def delete(self, request, pk: int):
        with refusals():
            services.schedule_delete(user=request.user, schedule=schedule_of(request, pk))
        return self.answer()


class KillSwitchGetApi(ApiView):
    """Whether schedules may start runs, who last changed that, when and why (the dashboard's banner)."""

    action = "killswitch.view"
    Output = KillSwitchOut

    def get(self, request):
        return self.answer(kill_switch())


class KillSwitchSetApi(ApiView):
    """Engage the kill switch (no schedule starts a run) or lift it, saying why; Admins only (409 when it is
    already so)."""

    action = "killswitch.set"
    Output = KillSwitchOut

    class Input(KillSwitchIn):
        pass

    def put(self, request):
        data = self.read(request)
        with refusals():
            services.kill_switch_set(user=request.user, engaged=data["engaged"], reason=data["reason"])
        return self.answer(kill_switch())


urlpatterns = [
    path("schedules", by_method(get=ScheduleListApi, post=ScheduleAddApi), name="schedules"),
    path("schedules/<int:pk>", by_method(get=ScheduleGetApi, patch=ScheduleChangeApi, delete=ScheduleDeleteApi),
         name="schedule-detail"),
    path("schedules/<int:pk>/pause", SchedulePauseApi.as_view(), name="schedule-pause"),
    path("schedules/<int:pk>/resume", ScheduleResumeApi.as_view(), name="schedule-resume"),
    path("kill-switch", by_method(get=KillSwitchGetApi, put=KillSwitchSetApi), name="kill-switch"),
]
