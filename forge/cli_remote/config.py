"""Where `forge login` keeps the server and the token: `$XDG_CONFIG_HOME/forge/config.json` (default
~/.config/forge), a file only its owner may read; FORGE_URL and FORGE_TOKEN in the environment override it."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from forge.errors import BadRequest, Unauthenticated


@dataclass(frozen=True)
class Server:
    url: str
    token: str


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "forge" / "config.json"


def normal_url(url: str) -> str:
    """The server's address without a trailing slash; only http and https are taken."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url) > 2000 or any(c.isspace() for c in url):
        raise BadRequest(f"{url!r} is not a server address: give one like https://forge.example.com")
    return url


def stored() -> Server | None:
    """The server to act on: FORGE_URL (with FORGE_TOKEN) first, else the config file, else None (local mode)."""
    url = os.environ.get("FORGE_URL", "").strip()
    if url:
        token = os.environ.get("FORGE_TOKEN", "").strip()
        if not token:
            raise Unauthenticated("FORGE_URL is set but FORGE_TOKEN is not: set both, or neither")
        return Server(normal_url(url), token)
    path = config_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise Unauthenticated(f"{path} may be read by others (mode {stat.S_IMODE(mode):o}), so its token is not "
                              f"used: run `chmod 600 {path}`, or `forge logout` and log in again")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Server(normal_url(data["url"]), str(data["token"]))
    except (OSError, ValueError, KeyError, TypeError, BadRequest):
        raise Unauthenticated(f"{path} cannot be read as a Forge login: run `forge logout`, then `forge login "
                              f"URL`") from None


def store(server: Server) -> Path:
    """Write the login, readable by its owner only (the folder too), replacing any earlier one."""
    path = config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temporary = path.with_name(f".config.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"url": server.url, "token": server.token}, file)
    os.replace(temporary, path)  # atomic: a reader sees the old login or the new, never half of one
    return path


def forget() -> bool:
    """Remove the stored login; whether there was one."""
    try:
        config_path().unlink()
        return True
    except FileNotFoundError:
        return False
