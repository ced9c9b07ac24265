"""A small workflow the edit tests share: three steps in a chain, a document field and a nested one."""

THREE_STEPS = """\
name: wf
description: first
steps:
  - id: fetch
    agent: shell
    command: echo one
    retry: {max_retries: 2, backoff_s: 1}
  - id: build
    agent: shell
    command: echo two
    depends_on: [fetch]
  - id: ship
    agent: shell
    command: echo three
    depends_on: [build]
"""
