"""Every audit code is declared once, in forge/audit/codes.py (docs/design/api.md, section 2): no literal code
anywhere else in forge/, each constant unique and explained, and every code an audit row is written with is one
of them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import forge
from engine.interpreter import DECISIONS
from engine.interpreter.state import RunStatus
from forge.audit import codes

FORGE = Path(forge.__file__).parent
ROOT = FORGE.parent
CODES_FILE = FORGE / "audit" / "codes.py"
DECLARED = {name: value for name, value in vars(codes).items() if name.isupper() and isinstance(value, str)}
SHAPE = re.compile(r"forge\.[a-z_]+\.[a-z_]+")
# An f-string's template, each replacement field as {}: f"forge.{noun}.created" is "forge.{}.created".
TEMPLATE_SHAPE = re.compile(r"forge\.[a-z_{}]+\.[a-z_{}]+")
# forge's own packages and modules: "forge.api.urls" or "forge.accounts.grant_admin_permissions" name code.
PACKAGES = {p.stem for p in FORGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
WRITERS = {"audit", "audit_event"}  # forge/audit/services.py's, and the runtime's Effects.audit
# Where an audit call passes on a code it was given, or picks it from a table this module checks below.
PASSED_ON = {
    "forge/audit/services.py": {"code"},
    "forge/runtime/effects.py": {"code"},
    "forge/schedules/firing.py": {"code"},
    "forge/accounts/audit_trail.py": {"code"},
    "forge/runtime/rounds.py": {"DECIDED[event.decision]", "FINISHED[command.status]"},
    "forge/governance/services.py": {"CODES[noun][0]", "CODES[noun][1]", "CODES[noun][2]"},
}


def _python_files():
    return sorted(p for p in FORGE.rglob("*.py") if p != CODES_FILE)


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}"


def _template(node: ast.JoinedStr) -> str:
    return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


def _is_code(text: str, pattern: re.Pattern) -> bool:
    return bool(pattern.fullmatch(text)) and text.split(".")[1] not in PACKAGES


def _literal_codes(path: Path) -> list[str]:
    """file:line and text of each string in `path` shaped as an audit code (an f-string building one too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    in_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and _is_code(_template(node), TEMPLATE_SHAPE):
            found.append(f"{_where(path, node)} f{_template(node)!r}")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_fstrings
              and _is_code(node.value, SHAPE)):
            found.append(f"{_where(path, node)} {node.value!r}")
    return found


def test_no_audit_code_is_written_out_anywhere_in_forge_but_codes_py():
    found = [hit for path in _python_files() for hit in _literal_codes(path)]
    assert not found, "use the constant of forge/audit/codes.py instead of:\n" + "\n".join(found)


def test_the_check_sees_a_literal_and_an_fstring_code_but_not_a_module_path(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('audit("forge.run.started")\n'
                      'audit(f"forge.{noun}.created")\n'
                      'audit(f"forge.user.{kind}_changed")\n'
                      'include("forge.api.urls")\n'
                      'connect(dispatch_uid="forge.accounts.grant_admin_permissions")\n'
                      'task = "forge.runtime.tasks.advance_run"\n'
                      '"""Audited as forge.run.started."""\n'
                      'check(id="forge.W101")\n')

    found = [hit.split(" ", 1)[1] for hit in _literal_codes(sample)]

    assert found == ["'forge.run.started'", "f'forge.{}.created'", "f'forge.user.{}_changed'"]


def test_no_template_or_script_writes_a_code_out():
    found = [f"{path.relative_to(ROOT)}: {code}"
             for path in sorted(FORGE.rglob("*")) if path.suffix in (".html", ".js", ".txt")
             for code in DECLARED.values() if code in path.read_text()]
    assert not found, "templates show codes only from the data they are given:\n" + "\n".join(found)


def test_each_constant_is_declared_once_with_a_unique_code_of_the_shape_and_its_meaning():
    source = CODES_FILE.read_text()
    tree = ast.parse(source)
    names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    lines = source.splitlines()

    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    values = list(DECLARED.values())
    assert len(values) == len(set(values)), [v for v in values if values.count(v) > 1]
    assert [v for v in values if not SHAPE.fullmatch(v)] == []
    assert [n for n, v in DECLARED.items() if n != v[len("forge."):].replace(".", "_").upper()] == []
    unexplained = [node.targets[0].id for node in tree.body if isinstance(node, ast.Assign)
                   and "  # " not in lines[node.lineno - 1]]
    assert unexplained == []
    assert {"RUN_STARTED", "TOKEN_CREATED", "TOKEN_REVOKED", "TOKEN_POLICY_CHANGED",
            "SERVICE_ACCOUNT_CREATED"} <= set(DECLARED)


def _audit_calls(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in WRITERS:
                yield node, node.args[0]


def _undeclared(path: Path, arg: ast.expr) -> list[str]:
    """Why `arg`, an audit call's code, is not known to be declared (nothing: it is)."""
    if isinstance(arg, ast.IfExp):
        return _undeclared(path, arg.body) + _undeclared(path, arg.orelse)
    if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "codes":
        return [] if arg.attr in DECLARED else [f"codes.{arg.attr} is not declared"]
    if ast.unparse(arg) in PASSED_ON.get(str(path.relative_to(ROOT)), ()):
        return []
    return [f"{ast.unparse(arg)} is no constant of forge/audit/codes.py"]


def test_every_audit_row_is_written_with_a_declared_code():
    found = [f"{_where(path, call)} {why}" for path in _python_files() for call, arg in _audit_calls(path)
             for why in _undeclared(path, arg)]
    assert not found, "\n".join(found)


def test_every_constant_forge_reads_is_declared():
    found = [f"{_where(path, node)} codes.{node.attr}" for path in _python_files()
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "codes"
             and node.attr not in DECLARED]
    assert not found, "\n".join(found)


def test_the_tables_audit_codes_are_picked_from_are_declared_and_complete():
    from forge.accounts import audit_trail  # noqa: F401 (its two codes are read as constants above)
    from forge.governance.services import AUDITED, CODES
    from forge.runtime.rounds import DECIDED, FINISHED

    declared = set(DECLARED.values())
    assert set(DECIDED) == set(DECISIONS) and set(DECIDED.values()) <= declared
    assert set(FINISHED) == set(RunStatus.TERMINAL) and set(FINISHED.values()) <= declared
    assert set(CODES) == set(AUDITED.values())
    assert {code for three in CODES.values() for code in three} <= declared
    assert all(three[0].endswith(".created") and three[1].endswith(".changed") and three[2].endswith(".deleted")
               for three in CODES.values())
