"""The API's governance operations (docs/design/api.md, section 5), for Admins: agents, gateways, budgets, policies
and step library entries (list, get, create, change, delete) and a gateway's new callback token, through
forge/governance/services.py as the admin calls it. Each row is checked as the admin's forms check it (the
models' fields and `clean`, forge/governance/validators.py); a refused one is a 422 problem naming its fields and
changes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.urls import path

from forge.api.base import ApiView
from forge.api.fields import invalid_of, restore_redacted
from forge.api.routes import by_method
from forge.api.serializers_governance import (
    AgentIn, AgentOut, BudgetIn, BudgetOut, GatewayIn, GatewayOut, LibraryIn, LibraryOut, PolicyIn, PolicyOut,
    TokenIssuedOut)
from forge.errors import Conflict, Invalid, NotFound
from forge.governance.models import Agent, BudgetEnvelope, Gateway, Policy
from forge.governance.services import agent_gateways_set, config_delete, config_save, gateway_token_issue
from forge.governance.validators import overridable_in_order
from forge.workflows.models import StepLibraryEntry

EDIT = "governance.edit"  # reading the configuration is the Admins' too: the admin is where it is shown


@dataclass(frozen=True)
class Kind:
    model: type[models.Model]
    noun: str  # in sentences: "There is no agent 12."
    related: tuple[str, ...] = ()  # prefetched for the answer


AGENTS = Kind(Agent, "agent", ("routes__gateway",))
GATEWAYS = Kind(Gateway, "gateway")
BUDGETS = Kind(BudgetEnvelope, "budget")
POLICIES = Kind(Policy, "policy")
LIBRARY = Kind(StepLibraryEntry, "step library entry")


class ConfigApi(ApiView):
    """What the operations on one kind of configuration share."""

    action = EDIT
    kind: Kind

    def rows(self):
        return self.kind.model.objects.prefetch_related(*self.kind.related)

    def row(self, pk: int) -> models.Model:
        found = self.rows().filter(pk=pk).first()
        if found is None:
            raise NotFound(f"There is no {self.kind.noun} {pk}.", code="no_such_" + self.kind.noun.replace(" ", "_"))
        return found

    def save(self, instance: models.Model, data: dict[str, Any]) -> None:
        """Set `data` on `instance` and save it through config_save (a change: a redacted value sent back as it was
        answered keeps what is stored); the model's checks refuse it as a 422 problem."""
        adding = instance.pk is None
        for name, value in data.items():
            setattr(instance, name, value if adding else restore_redacted(value, getattr(instance, name)))
        try:
            config_save(user=self.request.user, instance=instance)
        except ValidationError as exc:
            raise invalid_of(exc) from None
        except IntegrityError:  # a name taken by a request that committed after the model's check read
            raise Conflict(f"Another {self.kind.noun} took this name meanwhile; nothing was saved.",
                           code="name_taken") from None


class ConfigListApi(ConfigApi):
    paged = True
    ordering = ("name",)  # unique

    def get(self, request):
        return self.page(self.rows(), ordering=self.ordering)


class ConfigGetApi(ConfigApi):
    def get(self, request, pk: int):
        return self.answer(self.row(pk))


class ConfigCreateApi(ConfigApi):
    success_status = 201

    def post(self, request):
        instance = self.kind.model()
        with transaction.atomic():
            self.save(instance, dict(self.read(request)))
        return self.answer(self.row(instance.pk))


class ConfigChangeApi(ConfigApi):
    def patch(self, request, pk: int):
        instance = self.row(pk)
        with transaction.atomic():
            self.save(instance, dict(self.read(request, partial=True)))
        return self.answer(self.row(pk))


class ConfigDeleteApi(ConfigApi):
    success_status = 204

    def delete(self, request, pk: int):
        instance = self.row(pk)
        try:
            config_delete(user=request.user, instance=instance)
        except ValidationError as exc:  # still used: a gateway by its agents
            raise Conflict(" ".join(exc.messages), code="in_use") from None
        return self.answer()


# -- agents: their gateways, in order, change through agent_gateways_set with the row ---------------------------

class AgentSaving(ConfigApi):
    kind, Output = AGENTS, AgentOut

    def save(self, instance, data):
        names = data.pop("gateways", None)
        gateways = None if names is None else gateways_named(names)
        if "overridable" in data:  # as the admin's checkboxes keep them
            data["overridable"] = overridable_in_order(data["overridable"])
        super().save(instance, data)
        if gateways is not None:
            try:
                agent_gateways_set(user=self.request.user, agent=instance, gateways=gateways)
            except ValidationError as exc:
                raise Invalid(f"gateways: {exc.messages[0]}", code="invalid_fields",
                              errors={"gateways": exc.messages}) from None


def gateways_named(names: list[str]) -> list[Gateway]:
    found = {gateway.name: gateway for gateway in Gateway.objects.filter(name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        message = f"there is no gateway {unknown[0][:64]!r}"
        raise Invalid(f"gateways: {message}", code="invalid_fields", errors={"gateways": [message]})
    return [found[name] for name in names]


class AgentListApi(ConfigListApi):
    """The agents, by name, each with its gateways in order of preference; secrets redacted."""

    kind, Output = AGENTS, AgentOut


class AgentGetApi(ConfigGetApi):
    kind, Output = AGENTS, AgentOut


class AgentCreateApi(AgentSaving, ConfigCreateApi):
    """Make an agent (and its list of gateways), audited forge.agent.created."""

    class Input(AgentIn):
        pass


class AgentChangeApi(AgentSaving, ConfigChangeApi):
    """Change the fields given (`gateways`: the whole list, in order), audited forge.agent.changed."""

    class Input(AgentIn):
        pass


class AgentDeleteApi(ConfigDeleteApi):
    kind = AGENTS


# -- gateways ----------------------------------------------------------------------------------------------------

class GatewayListApi(ConfigListApi):
    """The gateways, by name: where they are, how healthy, whether a token is set (never the token)."""

    kind, Output = GATEWAYS, GatewayOut


class GatewayGetApi(ConfigGetApi):
    kind, Output = GATEWAYS, GatewayOut


class GatewayCreateApi(ConfigCreateApi):
    """Make a gateway (without a token: issue one next)."""

    kind, Output = GATEWAYS, GatewayOut

    class Input(GatewayIn):
        pass


class GatewayChangeApi(ConfigChangeApi):
    """Change the fields given; its health is measured, never set."""

    kind, Output = GATEWAYS, GatewayOut

    class Input(GatewayIn):
        pass


class GatewayDeleteApi(ConfigDeleteApi):
    """Delete a gateway no agent routes to (409 while one does)."""

    kind = GATEWAYS


class GatewayTokenIssueApi(ConfigApi):
    """Give a gateway a new callback token, shown in this answer only; the old one stops working at once."""

    kind, Output = GATEWAYS, TokenIssuedOut
    success_status = 201
    secret_fields = ("token",)

    def post(self, request, pk: int):
        gateway = self.row(pk)
        token = gateway_token_issue(user=request.user, gateway=gateway)
        return self.answer(data={"gateway": gateway.name, "token": token}, headers={"Cache-Control": "no-store"})


# -- budgets, policies, step library entries -------------------------------------------------------------------

class BudgetListApi(ConfigListApi):
    kind, Output = BUDGETS, BudgetOut


class BudgetGetApi(ConfigGetApi):
    kind, Output = BUDGETS, BudgetOut


class BudgetCreateApi(ConfigCreateApi):
    kind, Output = BUDGETS, BudgetOut

    class Input(BudgetIn):
        pass


class BudgetChangeApi(ConfigChangeApi):
    kind, Output = BUDGETS, BudgetOut

    class Input(BudgetIn):
        pass


class BudgetDeleteApi(ConfigDeleteApi):
    kind = BUDGETS


class PolicyListApi(ConfigListApi):
    kind, Output = POLICIES, PolicyOut
    ordering = ("order", "name")  # as dispatch reads them


class PolicyGetApi(ConfigGetApi):
    kind, Output = POLICIES, PolicyOut


class PolicyCreateApi(ConfigCreateApi):
    kind, Output = POLICIES, PolicyOut

    class Input(PolicyIn):
        pass


class PolicyChangeApi(ConfigChangeApi):
    kind, Output = POLICIES, PolicyOut

    class Input(PolicyIn):
        pass


class PolicyDeleteApi(ConfigDeleteApi):
    kind = POLICIES


class LibraryListApi(ConfigListApi):
    kind, Output = LIBRARY, LibraryOut


class LibraryGetApi(ConfigGetApi):
    kind, Output = LIBRARY, LibraryOut


class LibraryCreateApi(ConfigCreateApi):
    kind, Output = LIBRARY, LibraryOut

    class Input(LibraryIn):
        pass


class LibraryChangeApi(ConfigChangeApi):
    kind, Output = LIBRARY, LibraryOut

    class Input(LibraryIn):
        pass


class LibraryDeleteApi(ConfigDeleteApi):
    kind = LIBRARY


def _routes(prefix: str, name: str, list_, get, create, change, delete) -> list:
    return [path(prefix, by_method(get=list_, post=create), name=name),
            path(f"{prefix}/<int:pk>", by_method(get=get, patch=change, delete=delete), name=f"{name}-detail")]


urlpatterns = [
    *_routes("agents", "agents", AgentListApi, AgentGetApi, AgentCreateApi, AgentChangeApi, AgentDeleteApi),
    *_routes("gateways", "gateways", GatewayListApi, GatewayGetApi, GatewayCreateApi, GatewayChangeApi,
             GatewayDeleteApi),
    path("gateways/<int:pk>/token", GatewayTokenIssueApi.as_view(), name="gateway-token"),
    *_routes("budgets", "budgets", BudgetListApi, BudgetGetApi, BudgetCreateApi, BudgetChangeApi, BudgetDeleteApi),
    *_routes("policies", "policies", PolicyListApi, PolicyGetApi, PolicyCreateApi, PolicyChangeApi,
             PolicyDeleteApi),
    *_routes("step-library", "step-library", LibraryListApi, LibraryGetApi, LibraryCreateApi, LibraryChangeApi,
             LibraryDeleteApi),
]
