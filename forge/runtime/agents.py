"""From an Agent row to the engine executor that calls it: the one registry of providers."""

from __future__ import annotations

import functools
import threading

from django.conf import settings
from django.urls import reverse

from engine.executors import ShellExecutor, StepRequest, StepResult
from engine.executors.base import secrets_hidden
from engine.executors import MockExecutor
from engine.executors.http import HttpExecutor
from engine.executors.openai import DEFAULT_PRICES, OpenAIExecutor
from engine.executors.python_call import PythonExecutor, load_callables
from engine.executors.shell import agent_environment
from engine.secrets import SECRET_PREFIX, read_secret
from forge.governance.context import gateway_names
from forge.governance.models import Gateway, model_price, shell_network_problem, spend_bounds
from forge.runs.agent_config import CODE as AGENT_CONFIG_REFUSED, overlay_problems

# Where an openai agent's key comes from when its config names no api_key_env: under the agents' prefix like
# every secret an agent reads, so OPENAI_API_KEY set for other software on the machine is never sent.
DEFAULT_OPENAI_KEY_ENV = f"{SECRET_PREFIX}OPENAI_API_KEY"


class AgentMisconfigured(ValueError):
    """An agent's configuration cannot make an executor; the step fails with this message."""


@functools.lru_cache(maxsize=1)
def _python_callables() -> dict:
    return load_callables(settings.FORGE_PYTHON_CALLABLES)


def inline(agent) -> bool:
    """Python callables run in the advancing worker unless the agent says `"inline": false`."""
    return agent.provider == "python" and agent.config.get("inline", True) is not False


def _secret(agent, key: str, name: str) -> str | None:
    """The agent secret `name` (from config `key`), refused again here for a row saved without validation."""
    try:
        return read_secret(name)
    except ValueError as exc:
        raise AgentMisconfigured(f"agent {agent.name!r}: {key}: {exc}") from None


def auth_headers(agent) -> dict[str, str]:
    """What an http agent's requests to a gateway carry to authenticate: its token_env secret as a bearer token
    (dispatches and cancels alike)."""
    token_env = (agent.config or {}).get("token_env")
    token = _secret(agent, "token_env", token_env) if token_env else None
    return {"Authorization": f"Bearer {token}"} if token else {}


def executor_for(agent, watch=None, gateway=None):
    """The executor of `agent`'s provider, configured from its row, the `gateway` routing chose (an http agent's;
    None: its first) and the environment; a shell executor tells `watch` its output so far."""
    provider, config = agent.provider, agent.config or {}
    if provider == "mock":
        return MockExecutor()
    if provider == "shell":
        if problem := shell_network_problem(agent):  # a row saved before the rule, or without validation
            raise AgentMisconfigured(problem)
        try:
            return ShellExecutor(env=agent_environment(config), sandbox=settings.FORGE_SHELL_SANDBOX.for_agent(config),
                                 watch=watch)
        except ValueError as exc:  # a row saved without validation: refused again here
            raise AgentMisconfigured(f"agent {agent.name!r}: {exc}") from None
    if provider == "python":
        return PythonExecutor(_python_callables())
    if provider == "http":
        if gateway is None:
            gateway = first_gateway(agent)
        # The gateway routing chose is where the step goes; the agent's own url serves a gateway without one.
        url = (gateway.url if gateway else "") or config.get("url")
        if not url:
            raise AgentMisconfigured(f"agent {agent.name!r} has no url and no gateway with one")
        return HttpExecutor(url, headers=auth_headers(agent), callback_url=settings.FORGE_PUBLIC_URL + reverse("step-complete"),
                            egress_allow=settings.FORGE_EGRESS_ALLOW)
    if provider == "openai":
        api_key = _secret(agent, "api_key_env", config.get("api_key_env") or DEFAULT_OPENAI_KEY_ENV)
        base_url = config.get("base_url") or "https://api.openai.com/v1"
        model = config.get("model")
        if not model:
            raise AgentMisconfigured(f"agent {agent.name!r} has no model in its config")
        if problems := list(spend_bounds(config)):  # a row saved without validation: refused again here
            raise AgentMisconfigured(f"agent {agent.name!r}: {'; '.join(problems)}")
        price = model_price(config)
        prices = {**DEFAULT_PRICES, model: price} if price else None  # a step's agent_config.model: its list price
        return OpenAIExecutor(base_url, model, api_key=api_key, prices=prices,
                              system_prompt=config.get("system_prompt"), max_tokens=config.get("max_tokens"),
                              egress_allow=settings.FORGE_EGRESS_ALLOW)
    raise AgentMisconfigured(f"agent {agent.name!r} has an unknown provider {provider!r}")


def first_gateway(agent) -> Gateway | None:
    """The first of the agent's gateways (as the run pinned them) that still exists."""
    names = gateway_names(agent)
    rows = {g.name: g for g in Gateway.objects.filter(name__in=names)} if names else {}
    return next((rows[name] for name in names if name in rows), None)


def execute(agent, request: StepRequest, cancel: threading.Event, watch=None, gateway=None) -> StepResult:
    """Run one call of the agent (None: deleted since the step was dispatched), through `gateway` when routing
    chose one; a missing agent, a misconfiguration or an executor bug ends the step, never the worker."""
    if (refused := refusal(agent, request)) is not None:
        return refused
    try:
        executor = executor_for(agent, watch, gateway)
    except AgentMisconfigured as exc:
        return StepResult.failure(str(exc))
    return call(agent, executor, request, cancel)


def refusal(agent, request: StepRequest) -> StepResult | None:
    """The step's failure before any executor is built or anything is sent, or None when it may be called."""
    if agent is None:
        return StepResult.failure(f"agent {request.agent!r} no longer exists")
    # Checked when the run started against its pins; again here for an agent the run could not pin (created since).
    if overlay := overlay_problems(request.step, agent.name, agent.overridable, agent.config, request.agent_config):
        return StepResult.failure(f"{AGENT_CONFIG_REFUSED}: {'; '.join(overlay)}", AGENT_CONFIG_REFUSED)
    return None


def call(agent, executor, request: StepRequest, cancel: threading.Event) -> StepResult:
    """One call through an executor `executor_for` built; an executor bug is the step's failure, and no result
    shows the agent's secrets."""
    try:
        result = executor.execute(request, cancel)
    except Exception as exc:  # noqa: BLE001 - any executor fault is the step's failure
        result = StepResult.failure(f"the {agent.provider} agent failed: {type(exc).__name__}: {exc}"[:500])
    return secrets_hidden(result, secret_values(agent))


def secret_values(agent) -> list[str]:
    """The values of the agent secrets `agent` is given (token_env, api_key_env, secret_env), which no result
    of it may show; a name that is no agent secret's gives none (its step fails on it)."""
    config = agent.config if isinstance(agent.config, dict) else {}
    names = [config.get("token_env"), config.get("api_key_env")]
    if agent.provider == "openai" and not config.get("api_key_env"):
        names.append(DEFAULT_OPENAI_KEY_ENV)
    if isinstance(config.get("secret_env"), list):
        names += config["secret_env"]
    values = []
    for name in names:
        try:
            values.append(read_secret(name) if isinstance(name, str) else None)
        except ValueError:
            continue
    return [value for value in values if value]

