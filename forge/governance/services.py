"""Changing what governs dispatch: agents, gateways, budget envelopes, policies and step library entries.

Each change checks the person's Django model permission (Admins hold them), validates the row with its
model's own checks, saves it and appends an AuditEvent saying who changed which fields from what to what,
in one transaction. Rows are written with `.save()` / `.delete()` so the dispatch snapshot
(forge/governance/context.py) hears of every change.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_permission_codename
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.db.models import ProtectedError

from engine.secrets import redact_secrets
from forge.audit import codes
from forge.audit.services import audit
from forge.errors import Forbidden
from forge.governance import health
from forge.governance.models import Agent, AgentGateway, BudgetEnvelope, Gateway, Policy
from forge.workflows.models import StepLibraryEntry

# model -> the noun of its targets (<noun>:<name>)
AUDITED = {Agent: "agent", Gateway: "gateway", BudgetEnvelope: "budget", Policy: "policy",
           StepLibraryEntry: "library"}
# noun -> its audit codes: created, changed, deleted
CODES = {"agent": (codes.AGENT_CREATED, codes.AGENT_CHANGED, codes.AGENT_DELETED),
         "gateway": (codes.GATEWAY_CREATED, codes.GATEWAY_CHANGED, codes.GATEWAY_DELETED),
         "budget": (codes.BUDGET_CREATED, codes.BUDGET_CHANGED, codes.BUDGET_DELETED),
         "policy": (codes.POLICY_CREATED, codes.POLICY_CHANGED, codes.POLICY_DELETED),
         "library": (codes.LIBRARY_CREATED, codes.LIBRARY_CHANGED, codes.LIBRARY_DELETED)}


def _noun(instance: models.Model) -> str:
    try:
        return AUDITED[type(instance)]
    except KeyError:
        raise TypeError(f"{type(instance).__name__} is not governance configuration") from None


def _require(user, action: str, instance: models.Model) -> None:
    """`user` None is the system itself (a management command on the server), which may do anything."""
    opts = instance._meta
    if user is not None and not user.has_perm(f"{opts.app_label}.{get_permission_codename(action, opts)}"):
        raise Forbidden(f"you may not {action} {opts.verbose_name_plural}")


def _fields(instance: models.Model) -> dict[str, Any]:
    """What a person edits of the row, as JSON. Fields no form edits (a gateway's token hash, timestamps
    kept by Django) are left out, so no hash reaches the audit trail; _shown redacts what may be a secret."""
    values = {}
    for field in instance._meta.concrete_fields:
        if field.primary_key or not field.editable:
            continue
        if field.is_relation:
            related = getattr(instance, field.name)
            values[field.name] = str(related) if related is not None else None
        else:
            values[field.name] = field.value_from_object(instance)
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def _shown(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` as the audit trail holds them: what may be a secret (an environment value, a URL's query) redacted
    as every reader of the trail shows it."""
    return redact_secrets(fields)


def _target(noun: str, instance: models.Model) -> str:
    return f"{noun}:{getattr(instance, 'name', instance.pk)}"


def config_save(*, user, instance: models.Model) -> models.Model:
    """Create or change one configuration row (`instance`, holding the new values) and audit it.

    Raises:
        Forbidden: `user` lacks the add or change permission of the row's model.
        ValidationError: the new values fail the model's checks; nothing is saved or audited.
    """
    noun = _noun(instance)
    adding = instance._state.adding or instance.pk is None
    _require(user, "add" if adding else "change", instance)
    instance.full_clean()
    with transaction.atomic():
        if adding:
            instance.save()
            audit(CODES[noun][0], user=user, target=_target(noun, instance),
                  detail={"after": _shown(_fields(instance))})
            return instance
        # The stored row, locked, is what the change is measured from: the form already holds the new values.
        # Measured unredacted: a change of an environment value alone is audited, though shown redacted.
        stored = type(instance).objects.select_for_update().filter(pk=instance.pk).first()
        if stored is None:
            raise ValidationError(f"{_target(noun, instance)} was deleted meanwhile; nothing was saved")
        if isinstance(instance, Gateway):  # measured, not edited: a probe since the form was read is kept
            for name in health.MEASURED:
                setattr(instance, name, getattr(stored, name))
        before, after = _fields(stored), _fields(instance)
        instance.save()
        changed = sorted(name for name in after if before.get(name) != after[name])
        if changed:  # saving a form unchanged changes nothing to audit
            audit(CODES[noun][1], user=user, target=_target(noun, instance),
                  detail={"before": _shown({name: before.get(name) for name in changed}),
                          "after": _shown({name: after[name] for name in changed})})
    return instance


def config_delete(*, user, instance: models.Model) -> None:
    """Delete one configuration row and audit what it held.

    Raises:
        Forbidden: `user` lacks the delete permission of the row's model.
        ValidationError: other rows still use it (a gateway its agents); nothing is deleted or audited.
    """
    noun = _noun(instance)
    _require(user, "delete", instance)
    target, before = _target(noun, instance), _fields(instance)
    with transaction.atomic():
        try:
            instance.delete()
        except ProtectedError as exc:
            users = ", ".join(sorted(str(row) for row in exc.protected_objects))
            raise ValidationError(f"{target} is still used by {users}; change those first") from None
        audit(CODES[noun][2], user=user, target=target, detail={"before": _shown(before)})


def agent_gateways_set(*, user, agent: Agent, gateways: list[Gateway]) -> None:
    """Make `gateways` the agent's list, in that order of preference, and audit the change (forge.agent.changed,
    before and after as lists of names). Runs started before keep the list they pinned.

    Raises:
        Forbidden: `user` may not change agents.
        ValidationError: a gateway named twice; nothing is changed.
    """
    _require(user, "change", agent)
    after = [gateway.name for gateway in gateways]
    if len(set(after)) != len(after):
        raise ValidationError("each gateway may be named once in an agent's list")
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()  # one change of the list at a time
        before = [route.gateway.name for route in AgentGateway.objects.filter(agent=agent).select_related("gateway")]
        if before == after:
            return
        # One row at a time, so the dispatch snapshot hears of it (post_save, post_delete).
        for route in AgentGateway.objects.filter(agent=agent):
            route.delete()
        for position, gateway in enumerate(gateways):
            AgentGateway.objects.create(agent=agent, gateway=gateway, position=position)
        audit(codes.AGENT_CHANGED, user=user, target=_target("agent", agent),
              detail={"before": {"gateways": before}, "after": {"gateways": after}})


def gateway_token_issue(*, user, gateway: Gateway) -> str:
    """Give `gateway` a new callback token and return it, to be shown once; the old token stops working.

    The audit says who rotated it, never the token or its hash.
    """
    _require(user, "change", gateway)
    with transaction.atomic():
        locked = Gateway.objects.select_for_update().get(pk=gateway.pk)
        token = locked.set_token()
        locked.save(update_fields=["token_hash"])
        audit(codes.GATEWAY_TOKEN_ISSUED, user=user, target=_target("gateway", locked), detail={})
    gateway.token_hash = locked.token_hash
    return token
