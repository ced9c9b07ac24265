"""POST /killswitch/: an Admin engages or lifts the kill switch from the dashboard, with a reason, through the
schedules' service (which checks the permission and audits); it stops schedules only, never a person's run."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from forge.console.views.actions import MAX_TEXT
from forge.console.views.pages import require_view
from forge.schedules import services

STATES = {"on": True, "off": False}


@login_required
@require_POST
def kill_switch(request):
    require_view(request)
    state = request.POST.get("engaged", "")
    reason = request.POST.get("reason", "").strip()
    if state not in STATES:
        messages.error(request, "Nothing changed: say whether to engage (on) or lift (off) the kill switch.")
    elif not reason:
        messages.error(request, "Nothing changed: say why, in the reason.")
    elif len(reason) > MAX_TEXT:
        messages.error(request, f"Nothing changed: the reason has {len(reason)} characters; at most {MAX_TEXT} "
                                "are accepted.")
    else:
        try:
            services.kill_switch_set(user=request.user, engaged=STATES[state], reason=reason)
        except PermissionDenied:
            messages.error(request, "Nothing changed: only Admins engage or lift the kill switch.")
        except services.ScheduleRejected as exc:
            messages.error(request, f"Nothing changed: {exc}.")
        else:
            messages.success(request, "Kill switch engaged: schedules start no run; runs people start still start."
                             if STATES[state] else "Kill switch lifted: schedules start runs at their next times.")
    return redirect("console:dashboard")
