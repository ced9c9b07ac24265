"""What every console page's top bar shows."""

from forge.accounts.roles import can, may_use_admin
from forge.runs.selectors import approvals_for_user


def top_bar(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not can(user, "run.view"):
        return {}
    return {"approvals_waiting": len(approvals_for_user(user)), "may_use_admin": may_use_admin(user)}
