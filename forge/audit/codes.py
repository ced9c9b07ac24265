"""Every audit code, declared once (docs/design/api.md, section 2). Writers and filters use these constants;
tests/forge/audit/test_codes.py fails on a literal code anywhere else in forge/."""

from __future__ import annotations

# Runs
RUN_STARTED = "forge.run.started"  # a person started a run
RUN_RUNNING = "forge.run.running"  # the run began (its first step started)
RUN_COMPLETED = "forge.run.completed"  # the run ended with every step done
RUN_FAILED = "forge.run.failed"  # the run ended with a step failed, or timed out
RUN_CANCELLED = "forge.run.cancelled"  # the run ended cancelled
RUN_CANCEL_REQUESTED = "forge.run.cancel_requested"  # a person asked to cancel a run
RUN_RESTARTED = "forge.run.restarted"  # a person restarted a run from a step (a new run)
RUN_RESUMED = "forge.run.resumed"  # a crash was counted and the run taken up again
RUN_CHILD_STARTED = "forge.run.child_started"  # a step started a child run

# Steps
STEP_RESUMED = "forge.step.resumed"  # an attempt whose worker died was taken up again
STEP_CANCELLED = "forge.step.cancelled"  # a running attempt was cancelled (its gateway told)
STEP_RESULT_AFTER_END = "forge.step.result_after_end"  # a result came for a run already ended; dropped
STEP_STALE_RESULT_DISCARDED = "forge.step.stale_result_discarded"  # a result for an older attempt; dropped
STEP_UNKNOWN_ATTEMPT_RESULT = "forge.step.unknown_attempt_result"  # a gateway called back for no dispatched attempt

# Approvals and replies
APPROVAL_REQUESTED = "forge.approval.requested"  # a step asks people to decide or reply
APPROVAL_DECISION_REQUESTED = "forge.approval.decision_requested"  # a person sent a decision
APPROVAL_REPLY_REQUESTED = "forge.approval.reply_requested"  # a person sent a reply
APPROVAL_APPROVED = "forge.approval.approved"  # the run took an approval
APPROVAL_REJECTED = "forge.approval.rejected"  # the run took a rejection
APPROVAL_ESCALATION_RETRY = "forge.approval.escalation_retry"  # an escalation was decided: retry the step
APPROVAL_ESCALATION_SKIP = "forge.approval.escalation_skip"  # an escalation was decided: skip the step
APPROVAL_ESCALATION_ABORT = "forge.approval.escalation_abort"  # an escalation was decided: abort the run
APPROVAL_ANSWERED = "forge.approval.answered"  # the run took a reply (its length and digest)
APPROVAL_DECISION_TOO_LATE = "forge.approval.decision_too_late"  # a decision came after the question closed
APPROVAL_REPLY_TOO_LATE = "forge.approval.reply_too_late"  # a reply came after the question closed

# Schedules and the kill switch
SCHEDULE_ADDED = "forge.schedule.added"  # a person added a schedule
SCHEDULE_CHANGED = "forge.schedule.changed"  # a person changed a schedule
SCHEDULE_PAUSED = "forge.schedule.paused"  # a person paused a schedule
SCHEDULE_RESUMED = "forge.schedule.resumed"  # a person resumed a schedule
SCHEDULE_DELETED = "forge.schedule.deleted"  # a person deleted a schedule
SCHEDULE_DISPATCHED = "forge.schedule.dispatched"  # a schedule fired and started its run
SCHEDULE_QUEUED = "forge.schedule.queued"  # a schedule fired and its run waits for a slot
SCHEDULE_REFUSED = "forge.schedule.refused"  # a schedule fired and no run could start
KILLSWITCH_ENGAGED = "forge.killswitch.engaged"  # an Admin stopped every new run
KILLSWITCH_LIFTED = "forge.killswitch.lifted"  # an Admin let new runs start again

# Governance: the gates of a dispatch
GOVERNANCE_ALLOWED = "forge.governance.allowed"  # a dispatch passed the governance gates
GOVERNANCE_BLOCKED = "forge.governance.blocked"  # a dispatch was refused by a gate
GOVERNANCE_HELD = "forge.governance.held"  # a dispatch was held by a gate, to be tried again

# Governance: configuration rows (Admins)
AGENT_CREATED = "forge.agent.created"  # an agent was added
AGENT_CHANGED = "forge.agent.changed"  # an agent (or its list of gateways) was changed
AGENT_DELETED = "forge.agent.deleted"  # an agent was deleted
GATEWAY_CREATED = "forge.gateway.created"  # a gateway was added
GATEWAY_CHANGED = "forge.gateway.changed"  # a gateway was changed
GATEWAY_DELETED = "forge.gateway.deleted"  # a gateway was deleted
GATEWAY_TOKEN_ISSUED = "forge.gateway.token_issued"  # a gateway's callback token was issued anew
BUDGET_CREATED = "forge.budget.created"  # a budget envelope was added
BUDGET_CHANGED = "forge.budget.changed"  # a budget envelope was changed
BUDGET_DELETED = "forge.budget.deleted"  # a budget envelope was deleted
POLICY_CREATED = "forge.policy.created"  # a policy was added
POLICY_CHANGED = "forge.policy.changed"  # a policy was changed
POLICY_DELETED = "forge.policy.deleted"  # a policy was deleted
LIBRARY_CREATED = "forge.library.created"  # a step library entry was added
LIBRARY_CHANGED = "forge.library.changed"  # a step library entry was changed
LIBRARY_DELETED = "forge.library.deleted"  # a step library entry was deleted

# Workflows and the editor
WORKFLOW_CREATED = "forge.workflow.created"  # a workflow was made with its first version
WORKFLOW_VERSION_SAVED = "forge.workflow.version_saved"  # a new version of a workflow was saved
DRAFT_CREATED = "forge.draft.created"  # a person began an editor draft
DRAFT_DISCARDED = "forge.draft.discarded"  # a person discarded an editor draft
LAYOUT_SAVED = "forge.layout.saved"  # a version's graph layout was stored
LAYOUT_PLACED = "forge.layout.placed"  # a person moved steps on a draft's graph

# People, groups and sign-in
LOGIN_LOCKED_OUT = "forge.login.locked_out"  # too many failed sign-ins locked an account out
LOGIN_LOCKOUT_LIFTED = "forge.login.lockout_lifted"  # an Admin lifted a lockout
USER_CREATED = "forge.user.created"  # a person's account was made
USER_CHANGED = "forge.user.changed"  # a person's account fields were changed
USER_DELETED = "forge.user.deleted"  # a person's account was deleted
USER_GROUPS_CHANGED = "forge.user.groups_changed"  # a person was added to or removed from groups
USER_PERMISSIONS_CHANGED = "forge.user.permissions_changed"  # a person's own permissions were changed
GROUP_CREATED = "forge.group.created"  # a group was made
GROUP_RENAMED = "forge.group.renamed"  # a group was renamed
GROUP_DELETED = "forge.group.deleted"  # a group was deleted
GROUP_PERMISSIONS_CHANGED = "forge.group.permissions_changed"  # a group's permissions were changed

# Tokens and service accounts
TOKEN_CREATED = "forge.token.created"  # a personal or service-account token was made
TOKEN_REVOKED = "forge.token.revoked"  # a token was revoked
TOKEN_POLICY_CHANGED = "forge.token.policy_changed"  # an Admin changed the tokens' longest life
SERVICE_ACCOUNT_CREATED = "forge.service_account.created"  # an Admin made a service account
