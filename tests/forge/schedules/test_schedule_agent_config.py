"""A schedule's due time whose workflow sets an agent_config its agent does not allow is refused like any start
(spec 15's agent_config_refused): recorded on the fire and the schedule, audited, no run left behind."""

import pytest

from forge.governance.models import Agent
from forge.schedules.firing import fire_due_schedules
from tests.forge.schedules.test_guards import DUE, assert_refused

pytestmark = pytest.mark.django_db


def test_a_due_time_whose_step_overrides_what_its_agent_does_not_allow_is_refused(add_schedule, save_workflow):
    Agent.objects.create(name="writer", provider="mock", overridable=["model"])
    workflow = save_workflow("name: tuned_report\nsteps:\n  - {id: draft, agent: writer, command: draft, "
                             "agent_config: {temperature: 0.3}}\n").workflow
    schedule = add_schedule(workflow)

    assert fire_due_schedules(now=DUE) == {"validation_failed": 1}

    assert_refused(schedule, "validation_failed", "agent_config_refused: step 'draft' sets agent_config.temperature, "
                                                  "which agent 'writer' does not let a step override (it allows model)")
