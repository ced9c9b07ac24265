"""The console's pages: one view per page (forge/console/views/)."""

from django.contrib.auth import views as auth
from django.urls import path

from forge.console.views import actions, audit, live, pages, run_panes, runs, workflows
from forge.console.views import artifacts, decisions, editor_api, editor_pages, kill_switch, replies, spend, tokens

app_name = "console"

urlpatterns = [
    path("login/", auth.LoginView.as_view(template_name="console/login.html", redirect_authenticated_user=True),
         name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("", pages.dashboard, name="dashboard"),
    path("workflows/", workflows.workflow_list, name="workflows"),
    # a workflow's name is snake_case: "new-workflow" is never one
    path("workflows/new-workflow/", editor_pages.workflow_new, name="workflow_new"),
    path("workflows/new-workflow/<int:draft_id>/", editor_pages.editor_new, name="editor_new"),
    path("workflows/<str:name>/", workflows.workflow_detail, name="workflow"),
    path("workflows/<str:name>/edit/", editor_pages.workflow_edit, name="editor"),
    path("workflows/<str:name>/versions/", editor_pages.workflow_versions, name="workflow_versions"),
    path("workflows/<str:name>/versions/restore/", editor_pages.version_restore, name="version_restore"),
    path("schedules/<int:schedule_id>/toggle/", workflows.schedule_toggle, name="schedule_toggle"),
    path("approvals/", pages.approvals, name="approvals"),
    path("audit/", audit.audit_list, name="audit"),
    path("runs/", runs.run_list, name="runs"),
    path("runs/<int:run_id>/", runs.run_detail, name="run"),
    path("runs/<int:run_id>/steps/<str:step>/", runs.step_detail, name="step"),
    path("runs/<int:run_id>/attempts/", run_panes.run_attempts, name="attempts"),
    path("runs/<int:run_id>/log/", run_panes.run_log_view, name="run_log"),
    path("runs/<int:run_id>/decisions/", decisions.run_decisions, name="decisions"),
    path("runs/<int:run_id>/artifacts/<int:artifact_id>/", artifacts.artifact_download, name="artifact"),
    path("runs/<int:run_id>/cancel/", actions.run_cancel, name="cancel"),
    path("runs/<int:run_id>/restart/", actions.run_restart, name="restart"),
    path("approvals/<int:approval_id>/decide/", actions.approval_decide, name="decide"),
    path("approvals/<int:approval_id>/reply/", replies.reply_give, name="reply"),
    path("layouts/<str:content_hash>/", workflows.layout_keep, name="layout"),
    path("live/status/", live.live_status, name="live_status"),
    path("killswitch/", kill_switch.kill_switch, name="kill_switch"),
    path("spend/", spend.spend_page, name="spend"),
    path("tokens/", tokens.tokens_page, name="tokens"),
    path("editor/schema.json", editor_api.schema, name="editor_schema"),
    path("editor/diff", editor_api.diff, name="editor_diff"),
    path("editor/copy", editor_api.copy, name="editor_copy"),
    path("editor/drafts/<int:draft_id>/", editor_api.draft_read, name="editor_draft"),
    path("editor/drafts/<int:draft_id>/text", editor_api.draft_text, name="editor_text"),
    path("editor/drafts/<int:draft_id>/patch", editor_api.draft_patch, name="editor_patch"),
    path("editor/drafts/<int:draft_id>/placements", editor_api.draft_placements, name="editor_placements"),
    path("editor/drafts/<int:draft_id>/diff", editor_api.draft_diff, name="editor_draft_diff"),
    path("editor/drafts/<int:draft_id>/save", editor_api.draft_save, name="editor_save"),
    path("editor/drafts/<int:draft_id>/discard", editor_api.draft_discard, name="editor_discard"),
]
