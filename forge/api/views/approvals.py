"""The API's approvals operations (docs/design/api.md, section 5): my inbox, one approval, deciding it and answering
a reply request. Each calls the selector or service the console's inbox and run view call; who may read no
approvals is refused (403), an approval unknown or unreadable to those who may is a 404. A token holding
approvals:decide reads the approvals it may answer, not their runs (roles.SCOPE_INCLUDES)."""

from __future__ import annotations

from django.urls import path

from engine.interpreter import DECISIONS
from forge.accounts.roles import DECIDING_SCOPE, require
from forge.api.base import ApiView, StrictSerializer
from forge.api.fields import Choice, Words
from forge.api.serializers_runs import ApprovalOut
from forge.errors import NotFound
from forge.runs import services
from forge.runs.models import Approval
from forge.runs.selectors import approvals_queryset_for_user, may_read_approval

MAX_COMMENT = 2000  # as the console's decision form (forge/console/views/actions.py)
MAX_REPLY = 65536  # characters; the engine's own rule then counts its bytes (engine.interpreter.loops)
SHOWN = ("run__workflow", "decided_by")
READ = "approval.view"


def approval_of(request, pk: int) -> Approval:
    """The approval `pk` if the person may read it (`may_read_approval`); who may read none is refused first
    (403), as the views whose `action` is approval.view refuse them."""
    require(request.user, READ, "You are in no group of this console, so you may not see approvals.")
    approval = (Approval.objects.select_related(*SHOWN).defer("run__workflow__description").filter(pk=pk)
                .first())
    if approval is None or not may_read_approval(request.user, approval):
        raise NotFound(f"There is no approval {pk}.", code="no_such_approval")
    return approval


def fresh(approval: Approval) -> Approval:
    """The approval as its row now is (the run may have recorded the decision already)."""
    return Approval.objects.select_related(*SHOWN).get(pk=approval.pk)


class ApprovalInboxApi(ApiView):
    """The pending approvals and reply requests the person may answer, oldest first (the console's inbox)."""

    action = READ
    paged = True
    ordering = ("id",)
    Output = ApprovalOut

    def get(self, request):
        return self.page(approvals_queryset_for_user(request.user).select_related(*SHOWN))


class ApprovalDetailApi(ApiView):
    """One approval of a run the person may see, pending or not."""

    action = READ
    Output = ApprovalOut

    def get(self, request, pk: int):
        return self.answer(approval_of(request, pk))


class ApprovalDecideApi(ApiView):
    """Decide an approval (approve or reject), a governance hold or an escalation (retry, skip, abort), with a
    comment. The run records the decision: the answer may still say pending."""

    action = DECIDING_SCOPE
    Output = ApprovalOut

    class Input(StrictSerializer):
        decision = Choice(choices=DECISIONS, help_text="one of the approval's `options`")
        comment = Words(max_length=MAX_COMMENT, required=False, default="", allow_blank=True)

    def post(self, request, pk: int):
        data = self.read(request)
        decided = services.approval_decide(user=request.user, approval=approval_of(request, pk), **data)
        return self.answer(fresh(decided), status=202)


class ApprovalReplyApi(ApiView):
    """Answer a loop's reply request with text, which starts the step's next iteration."""

    action = DECIDING_SCOPE
    Output = ApprovalOut

    class Input(StrictSerializer):
        text = Words(max_length=MAX_REPLY, allow_blank=True, trim_whitespace=False)

    def post(self, request, pk: int):
        data = self.read(request)
        answered = services.reply_give(user=request.user, approval=approval_of(request, pk), text=data["text"])
        return self.answer(fresh(answered), status=202)


urlpatterns = [
    path("approvals", ApprovalInboxApi.as_view(), name="approval-inbox"),
    path("approvals/<int:pk>", ApprovalDetailApi.as_view(), name="approval-detail"),
    path("approvals/<int:pk>/decision", ApprovalDecideApi.as_view(), name="approval-decide"),
    path("approvals/<int:pk>/reply", ApprovalReplyApi.as_view(), name="approval-reply"),
]
