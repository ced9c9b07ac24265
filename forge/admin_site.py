"""Django admin for everyone in the Admins group, not only staff accounts: the console's Admin link leads there.

A change list's post names rows by id: the rows an action is for, and the rows of its editable columns.
Django uses those ids as they come, so one that is no id ('nan', a 5,000-digit number) was a 500, and one of
a row deleted since the list was shown built a new row out of two columns. Such a post changes nothing and
says why, on every change list of the site.
"""

from functools import wraps

from django.contrib import messages
from django.contrib.admin import AdminSite, helpers
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import ValidationError
from django.forms.formsets import ManagementForm
from django.http import HttpResponseRedirect

from forge.accounts.roles import may_use_admin

MAX_ROWS = 1000  # a page of a change list shows at most list_max_show_all rows, 200 by default


class ForgeAdminSite(AdminSite):
    def has_permission(self, request):
        return may_use_admin(request.user)

    def admin_view(self, view, cacheable=False):
        model_admin = getattr(view, "__self__", None)
        if getattr(view, "__name__", "") == "changelist_view" and model_admin is not None:
            view = _rows_checked(view, model_admin.model)
        return super().admin_view(view, cacheable)


def _rows_checked(view, model):
    @wraps(view)
    def changelist_view(request, *args, **kwargs):
        if request.method == "POST" and (problem := rows_problem(model, request.POST)):
            messages.error(request, f"Nothing was changed: {problem}. Reload the list and try again.")
            return HttpResponseRedirect(request.get_full_path())
        return view(request, *args, **kwargs)
    return changelist_view


def rows_problem(model, post) -> str | None:
    """What is wrong with the rows a change list's post names, or None."""
    ids = post.getlist(helpers.ACTION_CHECKBOX_NAME)
    editing = "_save" in post
    if editing:
        management = ManagementForm(post, prefix="form")
        if not management.is_valid():
            return "the list's form was altered"
        count = management.cleaned_data["TOTAL_FORMS"]
        if count != management.cleaned_data["INITIAL_FORMS"] or count > MAX_ROWS:
            return "the list's form names other rows than the list shows"
        ids += [post.get(f"form-{i}-{model._meta.pk.name}", "") for i in range(count)]
    try:
        keys = {model._meta.pk.clean(value, None) for value in ids}
    except ValidationError:
        return "a row is named by something that is no id"
    if editing and model._default_manager.filter(pk__in=keys).count() != len(keys):
        return "a row it names no longer exists"
    return None


class ForgeAdminConfig(AdminConfig):
    default_site = "forge.admin_site.ForgeAdminSite"
