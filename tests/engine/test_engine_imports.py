"""engine/ is the functional core: it must never import Django or the cluster's libraries."""

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FORBIDDEN = ("django", "channels", "rest_framework", "django_q", "daphne", "drf_spectacular")


def _imported_modules(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_no_engine_module_imports_django_side_code():
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        for module in _imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(ENGINE.parent)} imports {module}")
    assert offenders == []


def test_importing_every_engine_module_loads_no_django():
    modules = sorted(
        ".".join(path.relative_to(ENGINE.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in ENGINE.rglob("*.py") if path.name != "__main__.py")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ENGINE.parent, check=True)
    assert result.stdout.strip() == ""
