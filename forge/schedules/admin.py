"""Schedules, their fire records and the kill switch in the Django admin. Every change goes through the
services (permission, audit); who may see and change these pages comes from forge.accounts.roles."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django_q.models import Schedule as QueueSchedule

from forge.accounts.roles import can
from forge.admin_fields import KeptJSONField
from forge.admin_views import ReadOnlyAdmin
from forge.schedules import services
from forge.schedules.holds import approvers_words
from forge.schedules.models import KillSwitch, Schedule, ScheduleFire
from forge.schedules.selectors import kill_switch

# django-q2's own schedules run outside Forge's guards and audit (and its Cron option answered HTTP 500):
# people schedule workflows here instead. forge.schedules comes after django_q in INSTALLED_APPS, so its
# admin has registered by now.
if admin.site.is_registered(QueueSchedule):
    admin.site.unregister(QueueSchedule)

MANAGE, SWITCH = "schedule.manage", "killswitch.set"


class RoleAdmin(admin.ModelAdmin):
    """Pages whose access follows Forge's roles rather than Django's model permissions."""

    view_action = change_action = MANAGE

    def has_module_permission(self, request):
        return can(request.user, self.view_action)

    def has_view_permission(self, request, obj=None):
        return can(request.user, self.view_action)

    def has_add_permission(self, request):
        return can(request.user, self.change_action)

    def has_change_permission(self, request, obj=None):
        return can(request.user, self.change_action)

    def has_delete_permission(self, request, obj=None):
        return can(request.user, self.change_action)


def _groups() -> list[tuple[str, str]]:
    return [(name, name) for name in Group.objects.order_by("name").values_list("name", flat=True)]


class ScheduleForm(forms.ModelForm):
    args = KeptJSONField(required=False, help_text=Schedule._meta.get_field("args").help_text)
    approvers = forms.MultipleChoiceField(
        choices=_groups, required=False, widget=forms.CheckboxSelectMultiple,
        help_text="the groups whose members may approve a held run's start; none ticked: Approvers (Admins always "
                  "may)")

    class Meta:
        model = Schedule
        fields = ("workflow", "cron", "timezone", "args", "overlap", "enabled", "require_approval", "approvers")

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            services.check_schedule(workflow=data["workflow"], cron=data["cron"], timezone=data["timezone"],
                                    args=data.get("args") or {}, overlap=data["overlap"])
            services.check_approvers(data.get("approvers") or [])
        except services.ScheduleRejected as exc:
            # cron and timezone problems are reported once, by the model fields' own validators
            if exc.field not in ("cron", "timezone"):
                self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        return data


@admin.register(Schedule)
class ScheduleAdmin(RoleAdmin):
    form = ScheduleForm
    list_display = ("id", "workflow", "cron", "timezone", "enabled", "overlap_policy", "approval", "next_fire_at",
                    "last_dispatch_status", "last_dispatch_at", "last_dispatch_detail", "last_run")
    list_filter = ("enabled", "overlap", "require_approval", "last_dispatch_status")
    list_select_related = ("workflow", "last_run__workflow")
    readonly_fields = ("owner", "next_fire_at", "queued_due_at", "last_dispatch_status", "last_dispatch_at",
                       "last_dispatch_detail", "last_run", "created_at", "updated_at")
    actions = ["pause", "resume"]

    @admin.display(description="overlap", ordering="overlap")
    def overlap_policy(self, obj):
        return obj.overlap  # the form's choices explain each; the list needs only the name

    @admin.display(description="approval", ordering="require_approval")
    def approval(self, obj):
        return f"by {approvers_words(obj.approvers)}" if obj.require_approval else "none"

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if not change:
            created = services.schedule_add(user=request.user, workflow=data["workflow"], cron=data["cron"],
                                            timezone=data["timezone"], args=data.get("args") or {},
                                            overlap=data["overlap"], enabled=data["enabled"],
                                            require_approval=data["require_approval"],
                                            approvers=data.get("approvers") or [])
            obj.__dict__.update(created.__dict__)  # the admin's messages and redirect name the new row
            return
        with transaction.atomic():
            edited = ({"workflow", "cron", "timezone", "args", "overlap", "require_approval", "approvers"}
                      & set(form.changed_data))
            if edited:
                services.schedule_update(user=request.user, schedule=obj,
                                         **{name: data[name] if name != "args" else data.get("args") or {}
                                            for name in edited})
            if "enabled" in form.changed_data:
                verb = services.schedule_resume if data["enabled"] else services.schedule_pause
                verb(user=request.user, schedule=obj)

    def get_deleted_objects(self, objs, request):
        # A schedule's fire records go with it (the service deletes them and audits the schedule); their own
        # admin is read-only, which must not make deleting the schedule a 403.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(ScheduleFire._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request, obj):
        services.schedule_delete(user=request.user, schedule=obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():  # the bulk action deletes all it was given or none
            for obj in queryset:
                services.schedule_delete(user=request.user, schedule=obj)

    def _each(self, request, queryset, verb, done: str):
        for schedule in queryset:
            try:
                verb(user=request.user, schedule=schedule)
                self.message_user(request, f"schedule {schedule.pk}: {done}")
            except services.ScheduleRejected as exc:
                self.message_user(request, str(exc), messages.WARNING)

    @admin.action(description="Pause the selected schedules", permissions=["change"])
    def pause(self, request, queryset):
        self._each(request, queryset, services.schedule_pause, "paused")

    @admin.action(description="Resume the selected schedules (from their next cron time)", permissions=["change"])
    def resume(self, request, queryset):
        self._each(request, queryset, services.schedule_resume, "resumed")


@admin.register(ScheduleFire)
class ScheduleFireAdmin(ReadOnlyAdmin, RoleAdmin):
    """What became of every due time: written only by the firing."""

    list_display = ("schedule", "due_at", "status", "message", "run", "at")
    list_filter = ("status",)
    list_select_related = ("schedule__workflow", "run__workflow")


@admin.register(KillSwitch)
class KillSwitchAdmin(RoleAdmin):
    """One page: the switch's state, and a button to engage or lift it (Admins only)."""

    change_action = SWITCH

    def has_view_permission(self, request, obj=None):
        return can(request.user, MANAGE) or can(request.user, SWITCH)

    has_module_permission = has_view_permission

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            engage = request.POST.get("engaged") == "on"
            try:
                services.kill_switch_set(user=request.user, engaged=engage, reason=request.POST.get("reason", ""))
                self.message_user(request, "kill switch engaged: no schedule starts a run" if engage else
                                  "kill switch lifted: schedules fire again from their next cron time")
            except services.ScheduleRejected as exc:
                self.message_user(request, str(exc), messages.WARNING)
            return redirect(request.path)
        context = {**self.admin_site.each_context(request), "title": "Kill switch", "opts": self.model._meta,
                   "switch": kill_switch(), "may_change": self.has_change_permission(request),
                   **(extra_context or {})}
        return TemplateResponse(request, "admin/forge_schedules/killswitch.html", context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return redirect("admin:forge_schedules_killswitch_changelist")
