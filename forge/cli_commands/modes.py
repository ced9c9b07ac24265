"""Which mode a `forge` command runs in: through the stored server's API (forge login URL, or FORGE_URL and
FORGE_TOKEN) as the token's owner, or locally on the server as its admin; and `forge login` and `logout`, which
keep the server and token in the person's config. Nothing here needs Django set up."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import Callable

from engine.terminal import EXIT_INVALID, EXIT_OK, UsageError
from forge.cli_commands.parser import ACCOUNTS, SESSION, add_arguments
from forge.cli_commands.remote import Remote
from forge.cli_commands.waiting import Exit
from forge.cli_remote import config
from forge.cli_remote.client import Client
from forge.errors import BadRequest, ForgeError, exit_code_of

Write = Callable[[str], object]


def dispatch(options: dict, out: Write, err: Write, *, local: Callable[[dict], int] | None,
             transport=None) -> int | None:
    """Run the command through the stored server's API, or with `local` when none is stored (None when there is
    no server and no `local`: the caller runs it locally)."""
    try:
        action = options["action"]
        if action == "login":
            return login(options, out, transport=transport)
        if action == "logout":
            out(f"forgot the login stored in {config.config_path()}" if config.forget() else "no login was stored")
            return EXIT_OK
        server = config.stored()
        if server is None:
            return None if local is None else local(options)
        if options.get("user"):
            raise UsageError("--user acts as another person only on the server itself; through the API every "
                             "command acts as the owner of the stored token (forge logout to act locally)")
        if action in ACCOUNTS:
            raise BadRequest(f"`forge {action}` runs only on the server itself: the API has no lockout operation")
        client = Client(server.url, server.token, transport=transport)
        try:
            return Remote(client, out, err).handle(options)
        finally:
            client.close()
    except Exit as exc:
        return exc.code
    except ForgeError as exc:
        err(f"forge: {exc}")
        return exit_code_of(exc)
    except UsageError as exc:
        err(f"forge: {exc}")
        return EXIT_INVALID


def login(options: dict, out: Write, *, transport=None) -> int:
    url = config.normal_url(options["url"])
    path = options.get("token_file")
    if path == "-":
        token = sys.stdin.readline()
    elif path:
        try:
            token = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--token-file: cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    else:
        token = getpass.getpass(f"Token for {url} (made on the console's My tokens page): ")
    token = token.strip()
    if not token:
        raise UsageError("no token was given: nothing was stored")
    client = Client(url, token, transport=transport)
    try:
        me = client.get("/me")
    finally:
        client.close()
    where = config.store(config.Server(url, token))
    held = me.get("token") or {}
    out(f"logged in to {url} as {me['username']}" + (f" (token {held['prefix']}…, expires {held['expires_at'][:10]})"
                                                      if held else "") + f"; stored in {where}")
    return EXIT_OK


def script(argv: list[str]) -> int | None:
    """The `forge` script without Django when a server is stored or the command is login or logout; None to run
    it locally through the management command."""
    wanted = (any(word in SESSION for word in argv) or os.environ.get("FORGE_URL", "").strip()
              or config.config_path().exists())
    if not wanted:
        return None
    parser = argparse.ArgumentParser(prog="forge", description="Run workflows on a Forge server.")
    add_arguments(parser)
    options = vars(parser.parse_args(argv))
    return dispatch(options, print, lambda line: print(line, file=sys.stderr), local=None)
