"""`check --deploy` lists the agents and gateways saved with a secret in clear, before saving refused one.

Rows are not rewritten behind an Admin's back (the secret would still be in backups and in the provider's
hands): the warning names each place so that an Admin moves the secret to a FORGE_AGENT_SECRET_* variable
and rotates it. The values are never printed.
"""

from __future__ import annotations

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError

from engine.secrets import HOW_TO_GIVE_A_SECRET, literal_secret_paths
from forge.governance.models import Agent, Gateway


@register(Tags.security, deploy=True)
def literal_secrets_in_configuration(app_configs, **kwargs):
    try:
        rows = [(f"agent {name!r}", {"config": config}) for name, config in Agent.objects.values_list("name", "config")]
        rows += [(f"gateway {name!r}", {"url": url, "capabilities": capabilities})
                 for name, url, capabilities in Gateway.objects.values_list("name", "url", "capabilities")]
    except DatabaseError:  # not migrated yet: nothing saved to look at
        return []
    return [Warning(f"{row} holds a secret in clear at {', '.join(paths)}; the audit trail shows it redacted",
                    hint=f"edit the row: {HOW_TO_GIVE_A_SECRET}; then rotate the secret", id="forge.W101")
            for row, fields in rows if (paths := literal_secret_paths(fields))]
