"""docs/configuration.md's table names every environment variable forge/settings.py reads, and no other."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "forge" / "settings.py"
ENV = ROOT / "forge" / "env.py"
DOC = ROOT / "docs" / "configuration.md"
ENVIRON_CALLS = {"os.environ.get", "os.getenv", "environ.get", "getenv"}


def dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


def environ_keys(tree):
    """(key expression, line) of every direct read: os.environ.get / os.getenv, os.environ[...], `in os.environ`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and dotted(node.func) in ENVIRON_CALLS and node.args:
            yield node.args[0], node.lineno
        elif isinstance(node, ast.Subscript) and dotted(node.value) in ("os.environ", "environ"):
            yield node.slice, node.lineno
        elif isinstance(node, ast.Compare) and any(dotted(c) in ("os.environ", "environ") for c in node.comparators):
            yield node.left, node.lineno


def helpers() -> dict[str, set[str]]:
    """forge/env.py's public helpers, each with the suffixes it reads after NAME (env_secret: "" and "_FILE")."""
    found = {}
    for fn in ast.parse(ENV.read_text()).body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        param, suffixes = fn.args.args[0].arg, {""}
        for key, _ in environ_keys(fn):
            parts = key.values if isinstance(key, ast.JoinedStr) else []
            if len(parts) == 2 and dotted(getattr(parts[0], "value", None)) == param \
                    and isinstance(parts[1], ast.Constant):
                suffixes.add(parts[1].value)
        found[fn.name] = suffixes
    return found


def variables_read(source: str) -> tuple[set[str], list[int]]:
    """The variable names `source` reads, and the lines of reads whose name is not a string literal."""
    tree, names, unnamed = ast.parse(source), set(), []
    reads = [(key, line, {""}) for key, line in environ_keys(tree)]
    reads += [(node.args[0] if node.args else None, node.lineno, suffixes)
              for node in ast.walk(tree) if isinstance(node, ast.Call)
              for name, suffixes in helpers().items() if dotted(node.func) in (name, f"env.{name}")]
    for key, line, suffixes in reads:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names |= {key.value + suffix for suffix in suffixes}
        else:
            unnamed.append(line)
    return names, unnamed


def documented() -> set[str]:
    """The names in the first column of the document's table rows (lists and prose do not count)."""
    names = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return names


def test_every_variable_settings_reads_is_documented():
    missing = variables_read(SETTINGS.read_text())[0] - documented()
    assert not missing, f"add to the table in docs/configuration.md: {', '.join(sorted(missing))}"


def test_every_documented_variable_is_still_read():
    stale = documented() - variables_read(SETTINGS.read_text())[0]
    assert not stale, f"docs/configuration.md documents variables settings.py no longer reads: {sorted(stale)}"


def test_settings_names_every_variable_it_reads_literally():
    assert variables_read(SETTINGS.read_text())[1] == [], "a variable name this test cannot see"


def test_a_variable_added_to_settings_would_be_caught():
    source = SETTINGS.read_text() + '\nFORGE_NEW = env_int("FORGE_NEW", 1)\nX = os.environ["FORGE_X"]\n'
    assert variables_read(source)[0] - documented() == {"FORGE_NEW", "FORGE_X"}


def test_a_secret_is_read_from_its_file_too():
    assert {"FORGE_SECRET_KEY", "FORGE_SECRET_KEY_FILE"} <= variables_read(SETTINGS.read_text())[0]


def test_a_forge_setting_reads_the_variable_of_its_own_name():
    for node in ast.parse(SETTINGS.read_text()).body:
        if isinstance(node, ast.Assign) and dotted(node.targets[0]).startswith("FORGE_"):
            name = dotted(node.targets[0])
            assert variables_read(ast.unparse(node.value))[0] <= {name}, f"{name} reads another variable"
