"""Which environment variables an agent may read: only those named with the agents' secret prefix.

A worker's environment also holds the server's own secrets (FORGE_SECRET_KEY,
DATABASE_URL, ...); an agent's configuration is edited by admins who are not
the server's operators, so it may only name variables the operator put there
for agents.

Nor may they write a secret into the configuration itself: it would be
copied to the audit trail, which every Operator and Approver reads. A
configuration names the variable that holds a secret (`token_env`,
`api_key_env`, `secret_env`); literal_secret_problems refuses the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import unquote_plus

SECRET_PREFIX = "FORGE_AGENT_SECRET_"
_NAME = re.compile(r"FORGE_AGENT_SECRET_[A-Z0-9_]{1,100}")
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]{0,119}")


def secret_name_problem(name: object) -> str | None:
    """Why `name` may not be read by an agent, or None when it may. A value that does not read as a variable's
    name is not repeated: it may be the secret itself, written where its variable's name belongs."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        shown = repr(name) if isinstance(name, str) and _VARIABLE.fullmatch(name) else "this value"
        return (f"{shown} is not an agent secret: agents may only read environment variables "
                f"named {SECRET_PREFIX}<NAME> (capital letters, digits and _)")
    return None


def read_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of an agent secret (None when unset).

    Raises:
        ValueError: `name` is not an agent secret's name.
    """
    problem = secret_name_problem(name)
    if problem:
        raise ValueError(problem)
    return (os.environ if environ is None else environ).get(name)


# What a configuration key that holds a credential is called. Contained in the key lower-cased with its separators
# removed, so x-api-key, OPENAI_API_KEY, clientSecret, PGPASSWORD and refresh_token all match ...
CREDENTIAL_WORDS = ("apikey", "secret", "password", "passwd", "passphrase", "token", "authorization", "bearer",
                    "credential", "cookie", "session", "signature", "privatekey", "accesskey", "signingkey")
# ... or one of its words (split at separators and camel case), so private_key, x-key, X-Auth, sig and sentry_dsn
# match while keywords and monkey do not ...
CREDENTIAL_PARTS = ("key", "keys", "auth", "sig", "dsn", "pwd", "pass")
# ... or the end of one of its words: PGPASS, DBPWD.
CREDENTIAL_ENDINGS = ("pass", "pwd")
# Maps whose every value is a literal that may be a secret (a shell agent's environment, request headers): shown
# redacted whatever their keys are called.
LITERAL_MAPS = ("env", "environment", "headers")
REDACTED = "[redacted]"
HOW_TO_GIVE_A_SECRET = (f"put the secret in a {SECRET_PREFIX}<NAME> environment variable of the workers and name "
                        f"that variable under a key ending in _env (token_env, api_key_env; a shell agent lists it "
                        f"in secret_env and its steps read ${SECRET_PREFIX}<NAME>)")
MAX_DEPTH = 32
_SEPARATORS = re.compile(r"[^a-z0-9]")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A URL anywhere in a text, in parts: scheme://authority path ?query #fragment. The scheme is bounded so that a
# long run of letters is not rescanned from every position.
_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]{0,31}://)(?P<authority>[^\s/?#]*)(?P<path>[^\s?#]*)"
                  r"(?P<query>\?[^\s#]*)?(?P<fragment>#\S*)?", re.IGNORECASE)
_IGNORED_IN_URLS = {ord("\t"): None, ord("\n"): None, ord("\r"): None}  # dropped by URL parsers, as WHATWG says


def names_credential(key: str) -> bool:
    """Whether a configuration key reads as the name of a credential (api_key, x-api-key, PRIVATE_KEY, PGPASS, ...)."""
    squashed = _SEPARATORS.sub("", key.lower())
    if any(word in squashed for word in CREDENTIAL_WORDS):
        return True
    words = [word.lower() for word in _WORDS.findall(key)]
    return any(word in CREDENTIAL_PARTS or word.endswith(CREDENTIAL_ENDINGS) for word in words)


def literal_secret_problems(config: object) -> list[str]:
    """Why `config` (an agent's or gateway's JSON configuration) holds a secret in clear, each naming its path.

    A key that names a credential (see CREDENTIAL_WORDS) may hold a number, a boolean or null (max_tokens: 100),
    never text, at any depth and in everything beneath it; one that also ends in `_env` holds the name of the
    FORGE_AGENT_SECRET_* variable with the secret (or a list of such names). A URL of any scheme, anywhere in a
    text, may not carry a password, nor a query parameter or fragment named like a credential.

    Returns:
        One message per place, e.g. "env.OPENAI_API_KEY: ...", empty when there is none.
    """
    return [f"{path}: {reason}" if path else reason for path, reason in _scan(config, "", None, 0)[1]]


def literal_secret_paths(config: object) -> list[str]:
    """Where literal_secret_problems finds a secret in `config` (e.g. "env.OPENAI_API_KEY"), never the values."""
    return [path for path, _ in _scan(config, "", None, 0)[1]]


def redact_secrets(value: object) -> object:
    """`value` (a configuration, or an audit event's detail holding one) as it is shown: each value
    literal_secret_problems refuses, every value of an `env` or `headers` map, and every URL's userinfo, query
    and fragment replaced by REDACTED. Shown by what is known to be harmless, not only by what the rule refuses:
    an environment value or a query may be a secret under any name."""
    return _shown(_scan(value, "", None, 0)[0], hidden=False)


def _shown(value: object, hidden: bool) -> object:
    """`value` with its literal maps' values and its URLs' credentials redacted; _scan has bounded its depth."""
    if isinstance(value, Mapping):
        return {key: _shown(item, hidden or str(key).lower() in LITERAL_MAPS) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item, hidden) for item in value]
    if hidden and value is not None and value != "":
        return REDACTED
    return _URL.sub(_redacted_url, value) if isinstance(value, str) else value


def _redacted_url(url: re.Match) -> str:
    authority = url["authority"]
    if "@" in authority:
        authority = f"{REDACTED}@{authority.rpartition('@')[2]}"
    return (url["scheme"] + authority + url["path"] + (f"?{REDACTED}" if url["query"] else "")
            + (f"#{REDACTED}" if url["fragment"] else ""))


Found = list[tuple[str, str]]  # (path, reason)


def _scan(value: object, path: str, rule: str | None, depth: int) -> tuple[object, Found]:
    """`value` redacted, and where and why it holds a secret. `rule` is None in an ordinary place, "text"
    beneath a credential's name (no text allowed) and "name" under a credential's `_env` key (names only)."""
    if depth > MAX_DEPTH:
        return REDACTED, [(path, f"the configuration is nested more than {MAX_DEPTH} levels deep")]
    if rule == "name":
        return _scan_names(value, path, depth)
    if isinstance(value, Mapping):
        shown, found = {}, []
        for key, item in value.items():
            inner = rule
            if rule == "text" or names_credential(str(key)):
                inner = "name" if str(key).lower().endswith("_env") else "text"
            shown[key], inner_found = _scan(item, f"{path}.{key}" if path else str(key), inner, depth + 1)
            found.extend(inner_found)
        return shown, found
    if isinstance(value, list):
        scanned = [_scan(item, f"{path}[{i}]", rule, depth + 1) for i, item in enumerate(value)]
        return [shown for shown, _ in scanned], [place for _, found in scanned for place in found]
    if not isinstance(value, str) or not value:
        return value, []
    if rule == "text":
        return REDACTED, [(path, f"a key that names a credential may not hold text: {HOW_TO_GIVE_A_SECRET}; a count "
                                 f"is written as a number (max_tokens: 100)")]
    if problem := _url_secret(value):
        return REDACTED, [(path, f"{problem}; {HOW_TO_GIVE_A_SECRET}")]
    return value, []


def _scan_names(value: object, path: str, depth: int) -> tuple[object, Found]:
    """Under a credential's `_env` key: null, "", a secret's name, or a list of them."""
    if value is None or value == "":
        return value, []
    if isinstance(value, Mapping):
        return _scan(value, path, "text", depth)[0], [
            (path, f"a key ending in _env names a {SECRET_PREFIX}<NAME> variable (or lists such names), "
                   f"not an object")]
    names = value if isinstance(value, list) else [value]
    problems = [secret_name_problem(name) for name in names]
    shown = [REDACTED if problem else name for name, problem in zip(names, problems)]
    return (shown if isinstance(value, list) else shown[0]), [(path, problem) for problem in problems if problem]


def _url_secret(text: str) -> str | None:
    """Why a URL in `text` carries a credential: a password, or a query parameter or fragment named like one."""
    for url in _URL.finditer(text.translate(_IGNORED_IN_URLS)):
        userinfo, at, _ = url["authority"].rpartition("@")
        if at and userinfo.partition(":")[2]:
            return "a URL with a password in it is refused"
        for part in (url["query"], url["fragment"]):
            for pair in re.split(r"[&;]", (part or "")[1:]):
                name, equals, item = pair.partition("=")
                if equals and item and names_credential(unquote_plus(name)):
                    return f"a URL whose parameter {unquote_plus(name)[:60]!r} reads as a credential is refused"
    return None
