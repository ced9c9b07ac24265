"""Installs that cannot drift: every import is declared in pyproject.toml, requirements.lock pins every declared
dependency with hashes, and .venv holds exactly the lock (bin/setup installs it; bin/lock re-makes it)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from bench.peers.venvs import PINS as PEER_PINS

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = ROOT / "requirements.lock"
# The project's own top-level names: its packages, and what bench/ scripts import from beside them.
PROJECT = {"engine", "forge", "tests", "bench"} | {
    path.stem for path in (ROOT / "bench").iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
# pip and Forge itself are in .venv without being in the lock.
UNLOCKED = {"pip", "forge"}


def requirements(*groups: str) -> list[Requirement]:
    project = PYPROJECT["project"]
    found = [Requirement(text) for text in project["dependencies"]]
    for group in groups:
        found += [Requirement(text) for text in project["optional-dependencies"][group]]
    return found


def declared() -> set[str]:
    return {canonicalize_name(r.name) for r in requirements("test")}


def top_level_imports(path: Path) -> set[str]:
    """Every absolute import in the file, at any depth (a test may import inside a function)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def undeclared(paths, allowed: set[str]) -> list[str]:
    """The imports of `paths` that are neither the standard library, the project, nor a distribution in
    `allowed` (canonical names)."""
    distributions = metadata.packages_distributions()
    found = []
    for path in paths:
        for name in sorted(top_level_imports(path) - PROJECT - set(sys.stdlib_module_names)):
            installed = {canonicalize_name(d) for d in distributions.get(name, ())}
            if not (installed or {canonicalize_name(name)}) & allowed:
                found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} imports {name} "
                             f"({', '.join(sorted(installed)) or 'not installed'}), which pyproject.toml does "
                             f"not declare")
    return found


def locked() -> dict[str, tuple[str, list[str]]]:
    """requirements.lock as canonical name -> (version, hashes)."""
    entries, current = {}, None
    for line in LOCK.read_text().splitlines():
        if match := re.match(r"([A-Za-z0-9._-]+)==(\S+)", line):
            current = canonicalize_name(match[1])
            entries[current] = (match[2], [])
        elif current and (match := re.search(r"--hash=(sha256:[0-9a-f]{64})", line)):
            entries[current][1].append(match[1])
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"requirements.lock has a line that is not a hashed pin: {line!r}")
    return entries


def test_every_import_of_the_code_the_tests_and_the_benchmarks_is_declared():
    runtime = {canonicalize_name(r.name) for r in requirements()}
    code = [p for package in ("forge", "engine") for p in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in p.parts]
    tests = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").glob("*.py"))
    peers = sorted((ROOT / "bench" / "peers").glob("*.py"))  # run in their own pinned virtualenvs
    peer_pins = {canonicalize_name(Requirement(pin).name) for pins in PEER_PINS.values() for pin in pins}

    assert undeclared(code, runtime) == []
    assert undeclared(tests, declared()) == []
    assert undeclared(peers, declared() | peer_pins) == []


def test_the_import_check_sees_an_undeclared_import_even_inside_a_function(tmp_path):
    module = tmp_path / "uses_too_much.py"
    module.write_text("import json\nimport pytest\nfrom forge.env import env_bool\n\n"
                      "def later():\n    from cryptography import x509\n")

    assert [problem.split(" (")[0] for problem in undeclared([module], {"pytest"})] == [
        f"{module} imports cryptography"]
    assert undeclared([module], {"pytest", "cryptography"}) == []


def test_the_lock_pins_every_declared_dependency_and_the_build_backend_with_hashes():
    lock = locked()
    wanted = requirements("test") + [Requirement(text) for text in PYPROJECT["build-system"]["requires"]]
    wanted += [Requirement(f"{r.name}-binary") for r in wanted if r.name == "psycopg" and "binary" in r.extras]

    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{requirement} is declared but not locked: run bin/lock"
        version, hashes = lock[name]
        assert requirement.specifier.contains(version, prereleases=True), \
            f"the lock has {name}=={version}, which {requirement} does not allow: run bin/lock"
    assert all(hashes for _, hashes in lock.values())


def test_the_virtualenv_holds_exactly_the_lock():
    lock = locked()
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}

    assert {name: version for name, version in installed.items() if name in lock} == \
        {name: version for name, (version, _) in lock.items()}, "run bin/setup"
    assert sorted(set(installed) - set(lock) - UNLOCKED) == [], "installed without being locked: run bin/setup"


def test_django_q2_is_capped_below_its_next_minor_release():
    """forge/runtime/broker.py copies django-q2's brokers (tests/forge/runtime/test_broker.py checks their
    shape): a new minor release is taken on purpose, never by an install."""
    [q2] = [r for r in requirements() if canonicalize_name(r.name) == "django-q2"]
    major, minor, *_ = metadata.version("django-q2").split(".")

    assert q2.specifier.contains(metadata.version("django-q2"))
    assert not q2.specifier.contains(f"{major}.{int(minor) + 1}.0")
