"""Running `forge` in either mode from a test: locally through the management command, or through the API with
forge/cli_commands/remote.dispatch over any httpx transport (the Django app in this process, a live server)."""

from __future__ import annotations

import argparse
import io
import os
from unittest import mock

from django.core.management import call_command

from forge.cli_commands.parser import add_arguments
from forge.cli_commands.modes import dispatch
from forge.runs.management.commands.forge import LOCAL_NOTE


def options_of(*argv: str) -> dict:
    parser = argparse.ArgumentParser(prog="forge")
    add_arguments(parser)
    return vars(parser.parse_args(argv))


def remote(*argv: str, transport=None) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of `forge ARGV` through the stored server."""
    out, err = [], []
    code = dispatch(options_of(*argv), out.append, err.append, local=None, transport=transport)
    assert code is not None, "no server is stored"
    return code, "".join(line + "\n" for line in out), "".join(line + "\n" for line in err)


def local(*argv: str) -> tuple[int, str, str]:
    """The same in local mode, as the installation's admin; the local mode's note taken out of stderr (and
    checked to be there once)."""
    out, err = io.StringIO(), io.StringIO()
    alone = {k: v for k, v in os.environ.items() if k not in ("FORGE_URL", "FORGE_TOKEN")}
    try:
        with mock.patch.dict(os.environ, {**alone, "XDG_CONFIG_HOME": "/nonexistent/forge-cli-test"}, clear=True):
            call_command("forge", *argv, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    said = err.getvalue()
    assert said.count(LOCAL_NOTE) == 1, said
    return code, out.getvalue(), said.replace(LOCAL_NOTE + "\n", "")
