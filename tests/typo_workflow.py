"""A workflow with one validation warning (spec 15's unknown_name): `redy` for `ready` in a condition, at line 12
column 16. The engine's CLI, forge's command and the console's workflow page all show it."""

TYPO = """\
name: typo
steps:
  - id: probe
    agent: mock
    command: probe
    outputs: {ready: {type: boolean}}
    mock: {outputs: {ready: true}}
  - id: deploy
    agent: mock
    command: deploy
    depends_on: [probe]
    condition: "redy"
"""
SAID = "'redy' is not a name in scope in `condition` (did you mean 'ready'?)"
