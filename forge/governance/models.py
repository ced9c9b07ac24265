"""What every dispatch is governed by: agents, gateways, budgets, policies, and recorded spend."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from engine.executors.openai import DEFAULT_PRICES
from engine.executors.shell import agent_env_problems
from engine.governance.context import POLICY_EFFECTS, check_policy_expression
from engine.secrets import literal_secret_problems, secret_name_problem
from forge.runs.agent_config import overridable_problem

PROVIDERS = ("mock", "shell", "http", "openai", "python")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def secret_names(*keys: str):
    """A config check: each of `keys`, when set, is one name, not a list (literal_secret_problems checks the name)."""
    def check(config: dict):
        for key in keys:
            if isinstance(config.get(key), list):
                yield f"{key}: {secret_name_problem(config[key])}"
    return check


def spend_bounds(config: dict):
    """A config check: an openai agent's `max_tokens` and `price_per_million`, which its dispatches reserve."""
    tokens = config.get("max_tokens")
    if tokens is not None and (type(tokens) is not int or tokens <= 0):
        yield "max_tokens: the most tokens one call uses (prompt and reply), a whole number above 0"
    price = config.get("price_per_million")
    if price is not None and not (isinstance(price, list) and len(price) == 2
                                  and all(type(p) in (int, float) and 0 <= p < math.inf for p in price)):
        yield "price_per_million: [input, output] in USD per million tokens, two numbers of at least 0"


def model_price(config: dict) -> tuple[float, float] | None:
    """An openai agent's (input, output) USD per million tokens: its config's `price_per_million`, else its
    model's list price; None when neither is known."""
    own, model = config.get("price_per_million"), config.get("model")
    if own:
        return tuple(own)
    return DEFAULT_PRICES.get(model) if isinstance(model, str) else None


# What each provider's config must satisfy: checks that take the config (a dict) and yield problems.
CONFIG_CHECKS = {
    "http": (secret_names("token_env"),),
    "openai": (secret_names("api_key_env"), spend_bounds),
    "shell": (agent_env_problems,),
}


class Gateway(models.Model):
    """Where http agents send their steps, and whose token authenticates the callbacks."""

    name = models.CharField(max_length=64, unique=True)
    url = models.URLField(blank=True, help_text="the gateway's dispatch endpoint")
    token_hash = models.CharField(max_length=64, blank=True, editable=False)
    healthy = models.BooleanField(default=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    min_trust_level = models.PositiveSmallIntegerField(default=0)
    capabilities = models.JSONField(default=list, blank=True)
    health_url = models.URLField(blank=True, help_text="probed every FORGE_GATEWAY_PROBE_S; empty: only real "
                                                       "dispatches measure its health")
    cancel_url = models.URLField(blank=True, help_text="told when a step it took (202) is cancelled or times out")
    last_error = models.CharField(max_length=300, blank=True, help_text="why the last probe or dispatch failed")
    failures = models.PositiveIntegerField(default=0, help_text="connection failures in a row, probes and "
                                                                 "dispatches")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def set_token(self, token: str | None = None) -> str:
        """Store a new callback token (hashed) and return it; it is shown once, never stored in clear."""
        token = token or secrets.token_urlsafe(32)
        self.token_hash = hash_token(token)
        return token

    def token_matches(self, token: str) -> bool:
        return bool(self.token_hash) and hmac.compare_digest(self.token_hash, hash_token(token))

    def clean(self):
        problems = {field: found for field in ("url", "capabilities")
                    if (found := literal_secret_problems({field: getattr(self, field)}))}
        if problems:
            raise ValidationError(problems)


class Agent(models.Model):
    """What a step's `agent:` names: a provider (executor) and its configuration."""

    ACTIVE = "active"
    STATUSES = [(ACTIVE, "active"), ("paused", "paused"), ("retired", "retired")]

    name = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=16, choices=[(p, p) for p in PROVIDERS])
    config = models.JSONField(default=dict, blank=True,
                              help_text="provider settings, e.g. {\"model\": \"gpt-4o-mini\"}; secrets come from "
                                        "FORGE_AGENT_SECRET_* environment variables that token_env, api_key_env "
                                        "or secret_env name, never from here")
    gateways = models.ManyToManyField(Gateway, through="AgentGateway", blank=True, related_name="routed_agents",
                                      help_text="where its steps go, in order of preference")
    overridable = models.JSONField(default=list, blank=True,
                                   help_text="the agent_config keys a step may set: model, reasoning_effort, "
                                             "temperature, max_tokens")
    enabled = models.BooleanField(default=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=ACTIVE)
    role = models.CharField(max_length=64, blank=True)
    trust_level = models.PositiveSmallIntegerField(default=0)
    required_context_trust = models.PositiveSmallIntegerField(
        default=0, help_text="the run context's trust level this agent's role needs")
    max_concurrency = models.PositiveIntegerField(null=True, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(null=True, blank=True)
    monthly_budget = models.FloatField(null=True, blank=True)
    requires_approval = models.BooleanField(default=False, help_text="hold every step for a person's approval")
    estimated_cost = models.FloatField(default=0.0, help_text="expected cost of one call, for budget checks")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        if problem := overridable_problem(self.overridable):
            raise ValidationError({"overridable": problem})
        if not isinstance(self.config, dict):
            raise ValidationError({"config": "the configuration must be a JSON object"})
        problems = literal_secret_problems(self.config)
        problems += [problem for check in CONFIG_CHECKS.get(self.provider, ()) for problem in check(self.config)]
        if problem := shell_network_problem(self):
            problems.append(problem)
        if problems:  # a shell agent's bad secret_env name is found by both: said once
            raise ValidationError({"config": list(dict.fromkeys(problems))})


class AgentGateway(models.Model):
    """One gateway of an agent's ordered list: a dispatch takes the first healthy one covering the step."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="routes")
    gateway = models.ForeignKey(Gateway, on_delete=models.PROTECT, related_name="routes")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["agent", "gateway"], name="agent_gateway_once")]

    def __str__(self) -> str:
        return f"{self.agent} → {self.gateway} ({self.position})"


def shell_network_problem(agent) -> str | None:
    """Why a shell agent may not have `network: true`: its steps would reach what the worker reaches (127.0.0.1's
    PostgreSQL, Redis...), so only the server's operator grants it, by name, in FORGE_SHELL_NETWORK_AGENTS."""
    if agent.provider != "shell" or (agent.config or {}).get("network") is not True \
            or agent.name in settings.FORGE_SHELL_NETWORK_AGENTS:
        return None
    return (f"network: agent {agent.name!r} may not have the network: its steps would reach everything the worker "
            f"reaches, local databases included; only the server's operator can allow it, for this agent by name, "
            f"in the server's configuration (docs/sandbox.md)")


class BudgetEnvelope(models.Model):
    """A spending ceiling over a scope: the whole org, one workflow, or one agent."""

    name = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=140, default="org", help_text="org, workflow:<name> or agent:<name>")
    limit = models.FloatField()
    monthly = models.BooleanField(default=True, help_text="count this month's spend only")
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.scope})"

    def clean(self):
        kind, _, name = self.scope.partition(":")
        if not (self.scope == "org" or (kind in ("workflow", "agent") and name)):
            raise ValidationError({"scope": "use org, workflow:<name> or agent:<name>"})
        if self.limit is not None and self.limit < 0:
            raise ValidationError({"limit": "a budget cannot be negative"})


class Policy(models.Model):
    """A dispatch rule in the expression language: when it holds, block the step or ask a person."""

    EFFECTS = [(effect, effect.replace("_", " ")) for effect in POLICY_EFFECTS]

    name = models.CharField(max_length=64, unique=True)
    when = models.TextField(help_text="e.g. agent.trust_level < 2 and step.workflow == 'payments'")
    effect = models.CharField(max_length=20, choices=EFFECTS)
    message = models.CharField(max_length=300, blank=True)
    enabled = models.BooleanField(default=True)
    order = models.IntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.name

    def clean(self):
        problem = check_policy_expression(self.when)
        if problem:
            raise ValidationError({"when": problem})


class TokenEvent(models.Model):
    """One call of an agent, what budgets are measured from: its dispatch reserves the projected cost
    (`reserved`, `settled` false), and its result settles it to the tokens and cost it really spent. An
    attempt stopped without a result releases its reservation (`reserved` 0), still open to a late result."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    run_id = models.BigIntegerField(db_index=True)
    step = models.CharField(max_length=64)
    attempt = models.IntegerField()
    iteration = models.IntegerField(default=0)
    agent = models.CharField(max_length=64, db_index=True)
    workflow = models.CharField(max_length=128, db_index=True)
    tokens = models.PositiveBigIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    model = models.CharField(max_length=128, blank=True, help_text="the model that answered, as the agent said")
    cost = models.FloatField(default=0.0)
    reserved = models.FloatField(default=0.0, help_text="projected cost held against budgets while the call runs")
    settled = models.BooleanField(default=True, help_text="the call's result has been recorded")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["run_id", "step", "attempt", "iteration"],
                                               name="token_event_once_per_call")]
        # Open reservations are few: the sweep for abandoned ones reads this index, not the whole ledger.
        indexes = [models.Index(fields=["run_id"], condition=models.Q(reserved__gt=0), name="token_event_open")]
