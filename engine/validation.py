"""Validation of a .lobsterX document (spec section 3): every problem at once, with positions.

The order of work: load the YAML within its bounds; check types and keys
with the pydantic models, step by step so one bad step does not hide the
others; check references, completeness and expressions on the raw values
(with type guards, so a step with a bad field still gets its other fields
checked); then the graph. A document with no problem is compiled into a
Workflow for the interpreter.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from engine.expressions import RESERVED_ROOTS, ExpressionError, Path, parse, parse_path, paths
from engine.graph import CycleError, Graph
from engine.loop_checks import LOOP_VALUES, check_loop, check_mock
from engine.model import RETRYING_POLICIES, STEP_FIELDS, Document, Step
from engine.problems import Problem, WorkflowInvalid
from engine.templates import parse_template
from engine.workflow import InputBinding, StepSpec, Workflow, failure_policy
from engine.yamlload import Loaded, YamlLoadError, load

STEP_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
CRITERIA_LOCALS = frozenset({"output", "outputs"})
UNTIL_LOCALS = frozenset({"output", "outputs", "iteration", "previous_output"})
DOCUMENT_FIELDS = frozenset(Document.model_fields)
TEMPLATED = frozenset({"command", "approval_message"})


@dataclass
class Report:
    """The outcome of validation; `workflow` is set exactly when the document is valid."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    workflow: Workflow | None = None

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"valid": self.valid, "problems": [p.to_json() for p in self.problems],
                "warnings": [w.to_json() for w in self.warnings]}


def validate_source(data: bytes | str, *, library: Mapping[str, Mapping] | None = None,
                    shell_agents: tuple[str, ...] = ("shell",), loaded: Loaded | None = None) -> Report:
    """Validate a document's bytes.

    Args:
        data: the YAML document.
        library: the step library (name -> step fields); `library_step`
            references are merged from it when given.
        shell_agents: the agents that run commands in a shell; a placeholder
            of theirs where the value would be parsed again is an
            `expression_error` (spec section 6).
        loaded: `load(data)`, when the caller has it already (the editor
            loads a text once for its validation and its outline).

    Returns:
        A Report with every problem and warning, and the compiled Workflow
        when there is no problem.
    """
    with _collector_paused():
        try:
            loaded = loaded if loaded is not None else load(data)
        except YamlLoadError as exc:
            return Report(problems=[exc.problem])
        text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else data
        return _Validator(loaded, library, text, tuple(shell_agents)).run()


@contextlib.contextmanager
def _collector_paused():
    """Loading allocates hundreds of thousands of objects and no reference cycles; the cyclic
    collector would rescan the growing heap many times over (20-35% of validation time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_workflow(data: bytes | str, *, library: Mapping[str, Mapping] | None = None,
                  shell_agents: tuple[str, ...] = ("shell",)) -> Workflow:
    """Validate and compile, or raise WorkflowInvalid with every problem."""
    report = validate_source(data, library=library, shell_agents=shell_agents)
    if report.workflow is None:
        raise WorkflowInvalid(report.problems, report.warnings)
    return report.workflow


@dataclass
class _StepCheck:
    raw: dict
    index: int
    label: str | None  # the id as written, for problem reports
    model: Step | None = None
    refs: list[str] = field(default_factory=list)  # known steps this step depends on
    condition: Any = None
    criteria: list = field(default_factory=list)
    until: Any = None
    command: Any = None
    approval_message: Any = None
    fix_command: Any = None
    re_review_command: Any = None
    stdin: Path | None = None
    inputs: list = field(default_factory=list)
    ref_args: dict = field(default_factory=dict)


class _Validator:
    def __init__(self, loaded: Loaded, library: Mapping[str, Mapping] | None, source: str,
                 shell_agents: tuple[str, ...]):
        self.loaded = loaded
        self.shell_agents = shell_agents
        self.root: dict = loaded.value
        self.library = library
        self.source = source
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        self.steps: list[_StepCheck] = []
        self.by_index: dict[int, _StepCheck] = {}  # by position in the file's `steps` list
        self.ids: dict[str, int] = {}
        self.hints_left = HINTS
        self._declared: frozenset[str] | None = None
        self.unlisted = 0
        self.unlisted_code = ""

    def suggest(self, name: str, known) -> str:
        """A "did you mean" hint, while the budget lasts."""
        if self.hints_left <= 0:
            return ""
        self.hints_left -= 1
        return _suggest(name, known)

    # -- reporting -------------------------------------------------------

    @property
    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS

    def unlist(self, code: str) -> None:
        if not self.unlisted:
            self.unlisted_code = code
        self.unlisted += 1

    def report(self, code: str, message: str, path: tuple, step: _StepCheck | None = None,
               *, key: bool = False, position: bool = True, warning: bool = False) -> None:
        if not warning and self.full:
            self.unlist(code)
            return
        line, column = self.loaded.position(path, key=key) if position else (None, None)
        problem = Problem(code, message, step.label if step else None, line, column)
        (self.warnings if warning else self.problems).append(problem)

    # -- the passes ------------------------------------------------------

    def run(self) -> Report:
        document = self.check_document()
        self.collect_steps()
        self.check_strings()
        for check in self.steps:
            self.check_step_model(check)
        previous = None
        for check in self.steps:
            self.check_step_references(check, document, previous)
            previous = check
        self.check_graph()
        self.problems.sort(key=Problem.sort_key)
        if self.unlisted:
            self.problems.append(Problem(self.unlisted_code, f"... and {self.unlisted:,} more problems (the first "
                                         f"{MAX_PROBLEMS:,} are listed)"))
        self.warnings.sort(key=Problem.sort_key)
        report = Report(self.problems, self.warnings)
        if not self.problems:
            report.workflow = self.compile(document)
        return report

    def check_strings(self) -> None:
        """NUL in any string or key is bad_type (YAML lets it in through a "\\0" escape)."""
        for path in self.loaded.nul_paths:
            if path[-1] == "@key":
                self.report("bad_type", "a NUL character is not allowed in a key", path[:-1], self.step_of(path),
                            key=True)
            else:
                self.report("bad_type", "a NUL character is not allowed in any string", path, self.step_of(path))

    def step_of(self, path: tuple) -> _StepCheck | None:
        if len(path) >= 2 and path[0] == "steps":
            return self.by_index.get(path[1])
        return None

    def known_keys(self, raw: dict, fields: frozenset, base: tuple, check: _StepCheck | None) -> dict:
        """Report unknown keys here (one set difference, not one pydantic error each); keep the rest."""
        unknown = {k for k in raw.keys() - fields if not k.startswith("x-")}
        if not unknown:
            return raw
        for key in [k for k in raw if k in unknown]:  # in document order
            if self.full:
                self.unlist("unknown_key")
                continue
            self.report("unknown_key", _message("extra_forbidden", (key,), {}, fields, self.suggest), base + (key,),
                        check, key=True)
        return {k: v for k, v in raw.items() if k not in unknown}

    def check_document(self) -> Document | None:
        try:
            document = Document.model_validate(self.known_keys(self.root, DOCUMENT_FIELDS, (), None))
        except ValidationError as exc:
            self.report_pydantic(exc, (), None, DOCUMENT_FIELDS)
            document = None
        name = self.root.get("name")
        if isinstance(name, str) and _has_control(name):
            self.report("bad_type", "the workflow name holds a control or bidirectional-override character",
                        ("name",))
        return document

    def collect_steps(self) -> None:
        steps = self.root.get("steps")
        if steps is None or steps == []:
            self.report("missing_field", "`steps` is required and must list at least one step", ("steps",),
                        position="steps" in self.root)
            return
        if not isinstance(steps, list):
            self.report("bad_type", "`steps` must be a list of steps", ("steps",))
            return
        for index, raw in enumerate(steps):
            if not isinstance(raw, dict):
                self.report("bad_type", f"step {index + 1} must be a mapping of fields", ("steps", index))
                continue
            raw = self.merge_library(raw, index)
            check = _StepCheck(raw, index, _label(raw))
            self.steps.append(check)
            self.by_index[index] = check
        # Ids: the first occurrence of each valid id owns it.
        for check in self.steps:
            step_id = check.raw.get("id")
            path = ("steps", check.index, "id")
            if "id" not in check.raw:
                continue  # reported as missing_field by the model
            if not isinstance(step_id, str) or not STEP_ID.fullmatch(step_id):
                self.report("bad_step_id", f"step id {step_id!r} must match ^[a-z][a-z0-9_]{{0,63}}$ "
                            "(snake_case, at most 64 characters)", path, check)
            elif step_id == "loop":  # spec 9 (the other reserved roots came before this rule and stay allowed)
                self.report("bad_step_id", "step id 'loop' is reserved: `loop.…` names a loop step's values in "
                            "templates", path, check)
            elif step_id in self.ids:
                line = self.loaded.position(("steps", self.ids[step_id], "id"))[0]
                self.report("duplicate_step_id", f"step id {step_id!r} is already used (line {line})", path, check)
            else:
                self.ids[step_id] = check.index

    def merge_library(self, raw: dict, index: int) -> dict:
        name = raw.get("library_step")
        if self.library is None or not isinstance(name, str):
            return raw
        entry = self.library.get(name)
        if entry is None:
            self.report("unknown_reference", f"library step {name!r} is not in the step library",
                        ("steps", index, "library_step"), _StepCheck(raw, index, _label(raw)))
            return raw
        merged = {k: v for k, v in entry.items() if k != "id"}
        merged.update(raw)
        return merged

    def check_step_model(self, check: _StepCheck) -> None:
        try:
            check.model = Step.model_validate(self.known_keys(check.raw, STEP_FIELDS, ("steps", check.index), check))
        except ValidationError as exc:
            self.report_pydantic(exc, ("steps", check.index), check, STEP_FIELDS)
        raw = check.raw
        base = ("steps", check.index)
        for key in ("name", "label"):
            if isinstance(raw.get(key), str) and _has_control(raw[key]):
                self.report("bad_type", f"the step {key} holds a control or bidirectional-override character",
                            base + (key,), check)
        if isinstance(raw.get("retry"), dict) and isinstance(raw.get("on_failure"), str) \
                and raw["on_failure"] in RETRYING_POLICIES:
            self.report("bad_type", f"a `retry:` block cannot be combined with on_failure "
                        f"{raw['on_failure']!r}; use halt or skip after the retries", base + ("retry",), check)
        kinds = [kind for kind, present in (
            ("an approval step", raw.get("approval") is not None),
            ("a sub-workflow", raw.get("workflow_ref") is not None),
            ("an agent step", raw.get("agent") is not None or raw.get("command") is not None),
        ) if present]
        check_loop(self, check)
        check_mock(self, check)
        if len(kinds) > 1:
            self.report("conflicting_step_kind", f"a step can be only one of: {', '.join(kinds)}", base, check)
        elif not kinds or kinds == ["an agent step"]:
            # a library step whose entry is unknown here (no library given, or not in it: reported once, as
            # unknown_reference) has no fields to judge yet
            library_step = raw.get("library_step")
            exempt = library_step is not None and (self.library is None or not isinstance(library_step, str)
                                                   or library_step not in self.library)
            if not exempt and raw.get("agent") is None:
                self.report("missing_agent", "an agent step needs `agent` (the agent that runs it)", base, check)
            if not exempt and raw.get("command") is None:
                self.report("missing_command", "an agent step needs `command` (what the agent does)", base, check)

    def check_step_references(self, check: _StepCheck, document: Document | None,
                              previous: _StepCheck | None) -> None:
        raw = check.raw
        base = ("steps", check.index)
        own_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        if previous is not None and self.root.get("sequential") is True and "depends_on" not in raw:
            # spec 15: a sequential document's step without a depends_on key follows the one before it in the file
            before = previous.raw.get("id")
            if isinstance(before, str) and self.ids.get(before) == previous.index:
                check.refs.append(before)
        depends_on = raw.get("depends_on")
        if isinstance(depends_on, list):
            for k, dep in enumerate(depends_on):
                if not isinstance(dep, str):
                    continue
                if dep in self.ids:
                    check.refs.append(dep)
                else:
                    self.report("unknown_dependency", f"depends_on names {dep!r}, which is not a step of "
                                f"this workflow{self.suggest(dep, self.ids)}", base + ("depends_on", k), check)
        stdin = raw.get("stdin")
        if isinstance(stdin, str):
            check.stdin = self.path_field(check, stdin, base + ("stdin",), "stdin", dollar=True)
        inputs = raw.get("inputs")
        if isinstance(inputs, dict):
            for name, spec in inputs.items():
                if isinstance(spec, dict) and isinstance(spec.get("from"), str):
                    path = self.path_field(check, spec["from"], base + ("inputs", name, "from"), "inputs.from")
                    if path is not None:
                        check.inputs.append((name, path, spec))
                    if isinstance(raw.get("outputs"), dict) and name in raw["outputs"]:
                        self.report("input_output_overlap", f"{name!r} is both an input and an output; the "
                                    "agent may overwrite the upstream value", base + ("inputs", name), check,
                                    key=True, warning=True)
        condition = raw.get("condition")
        if isinstance(condition, str):
            check.condition = self.expression(check, condition, base + ("condition",), frozenset())
        criteria = raw.get("success_criteria")
        if isinstance(criteria, list):
            for k, text in enumerate(criteria):
                if isinstance(text, str):
                    node = self.expression(check, text, base + ("success_criteria", k), CRITERIA_LOCALS, own_id)
                    if node is not None:
                        check.criteria.append((text, node))
        loop = raw.get("loop")
        if isinstance(loop, dict) and isinstance(loop.get("until"), str):
            check.until = self.expression(check, loop["until"], base + ("loop", "until"), UNTIL_LOCALS, own_id)
        for key in ("command", "approval_message"):
            if isinstance(raw.get(key), str):
                setattr(check, key, self.template(check, raw[key], base + (key,)))
        self.shell_slots(check, check.command, raw.get("agent"), base + ("command",))
        fix = loop.get("on_request_changes") if isinstance(loop, dict) else None
        if isinstance(fix, dict):
            fix_agent = fix.get("fix_agent") if fix.get("fix_agent") is not None else raw.get("agent")
            for key, agent in (("fix_command", fix_agent), ("re_review_command", raw.get("agent"))):
                if isinstance(fix.get(key), str):
                    where = base + ("loop", "on_request_changes", key)
                    template = self.template(check, fix[key], where)
                    setattr(check, key, template)
                    self.shell_slots(check, template, agent, where)
        ref = raw.get("workflow_ref")
        if isinstance(ref, dict) and isinstance(ref.get("args"), dict):
            for name, value in ref["args"].items():
                where = base + ("workflow_ref", "args", name)
                check.ref_args[name] = self.template(check, value, where) if isinstance(value, str) else value
        phase = raw.get("phase")
        if isinstance(phase, str) and document is not None and phase not in document.phases:
            declared = ", ".join(document.phases) or "none"
            self.report("unknown_phase", f"phase {phase!r} is not declared under `phases` (declared: "
                        f"{declared})", base + ("phase",), check)

    def shell_slots(self, check: _StepCheck, template, agent, where: tuple) -> None:
        """A placeholder where a shell command would parse its value again (spec section 6)."""
        if template is not None and agent in self.shell_agents:
            for slot in template.shell_slots():
                if slot.problem:
                    self.report("expression_error", slot.problem, where, check)

    def path_field(self, check: _StepCheck, text: str, where: tuple, what: str, dollar: bool = False):
        try:
            path = parse_path(text)
        except ExpressionError:
            path = None
        if path is None or (dollar and not path.dollar) or (dollar and len(path.segments) < 2):
            hint = "`$step.stdout`, `$step.outputs.field` or `$step.approved`" if dollar else \
                "a path such as `step.outputs.field`"
            self.report("bad_type", f"{what} must be {hint}, not {text!r}", where, check)
            return None
        self.reference(check, path, where, frozenset())
        return path

    def expression(self, check: _StepCheck, text: str, where: tuple, local: frozenset, own_id=None):
        try:
            node = parse(text)
        except ExpressionError as exc:
            self.report("expression_error", f"{where[-1] if isinstance(where[-1], str) else where[-2]} "
                        f"does not parse: {exc}", where, check)
            return None
        for path in paths(node):
            self.reference(check, path, where, local, own_id)
            if not path.dollar:
                self.bare_name(check, path, where, local)
        return node

    def bare_name(self, check: _StepCheck, path: Path, where: tuple, local: frozenset) -> None:
        """A bare name no declaration puts in scope: a warning, since an undeclared output may set it (spec 15)."""
        root = path.segments[0]
        if (root in local or root in RESERVED_ROOTS or root in self.ids or root in self.declared
                or (len(path.segments) >= 2 and path.segments[1] == "outputs")):
            return
        known = self.declared | local | {"vars", "args", "run"}
        self.report("unknown_name", f"{root!r} is not a name in scope in {_place(where)}"
                    f"{self.suggest(root, known)}: no argument, variable, output or input declares it, so it reads "
                    "as null unless an undeclared output sets it at run time", where, check, warning=True)

    @property
    def declared(self) -> frozenset[str]:
        """The names a run's variables may hold by declaration: `args`, `variables`, every step's `outputs`,
        `mock.outputs` (and its sequence's) and `inputs` (passed through to its outputs), and `approved` when
        there is an approval step (its outputs). Gathered once, when the first bare name needs it."""
        if self._declared is None:
            names: set[str] = set()
            for key in ("args", "variables"):
                if isinstance(self.root.get(key), dict):
                    names.update(k for k in self.root[key] if isinstance(k, str))
            for check in self.steps:
                raw = check.raw
                mock = raw.get("mock") if isinstance(raw.get("mock"), dict) else {}
                sequence = mock.get("sequence") if isinstance(mock.get("sequence"), list) else []
                for fields in (raw.get("outputs"), raw.get("inputs"), mock.get("outputs"),
                               *(call.get("outputs") for call in sequence if isinstance(call, dict))):
                    if isinstance(fields, dict):
                        names.update(k for k in fields if isinstance(k, str))
                if raw.get("approval") is not None:
                    names.add("approved")
            self._declared = frozenset(names)
        return self._declared

    def template(self, check: _StepCheck, text: str, where: tuple):
        try:
            template = parse_template(text)
        except ExpressionError as exc:
            self.report("expression_error", f"a template in {where[-1]} does not parse: {exc}", where, check)
            return None
        for path in template.paths:
            self.reference(check, path, where, frozenset())
        return template

    def reference(self, check: _StepCheck, path: Path, where: tuple, local: frozenset, own_id=None) -> None:
        root = path.segments[0]
        if not path.dollar and root == "loop":
            self.loop_path(check, path, where)
            return
        if not path.dollar and (root in local or root in RESERVED_ROOTS):
            return
        if path.dollar or root in self.ids or (len(path.segments) >= 2 and path.segments[1] == "outputs"):
            if root not in self.ids:
                self.report("unknown_reference", f"{path.text()} refers to step {root!r}, which is not a "
                            f"step of this workflow{self.suggest(root, self.ids)}", where, check)
            elif root != own_id or not local:
                check.refs.append(root)

    def loop_path(self, check: _StepCheck, path: Path, where: tuple) -> None:
        """`loop.…` reads a loop step's values, in its templates and its `until` only (spec section 9)."""
        in_loop = isinstance(check.raw.get("loop"), dict) and (
            where[2] in TEMPLATED or where[2:4] == ("loop", "until") or where[2:4] == ("loop", "on_request_changes"))
        if not in_loop:
            place = "a step without `loop`" if not isinstance(check.raw.get("loop"), dict) else f"`{where[2]}`"
            self.report("loop_path_outside_loop", f"{path.text()} has no value in {place}: the loop's values "
                        "are in a loop step's command, approval_message, fix and re-review commands and "
                        "until only", where, check)
        elif len(path.segments) < 2 or path.segments[1] not in LOOP_VALUES:
            self.report("unknown_reference", f"{path.text()} is not a value of the loop; it has "
                        f"{', '.join(f'loop.{name}' for name in sorted(LOOP_VALUES))}", where, check)

    def check_graph(self) -> None:
        owners = [c for c in self.steps if isinstance(c.raw.get("id"), str) and self.ids.get(c.raw["id"]) == c.index]
        graph = Graph({c.raw["id"]: c.refs for c in owners})
        try:
            graph.layers()
        except CycleError as exc:
            first = self.by_index[self.ids[exc.cycle[0]]]
            self.report("cycle", str(exc), ("steps", first.index, "id"), first)

    # -- pydantic errors -------------------------------------------------

    def report_pydantic(self, exc: ValidationError, base: tuple, check: _StepCheck | None,
                        fields: frozenset) -> None:
        raw = self.root if not base else check.raw
        seen: set = set()
        for error in exc.errors(include_url=False):
            kind = error["type"]
            code = {"extra_forbidden": "unknown_key", "missing": "missing_field"}.get(kind, "bad_type")
            loc = _trim(raw, tuple(error["loc"]), kind)
            if not base and loc and loc[0] == "steps":
                continue  # steps are validated one by one
            if base and loc and loc[0] == "id" and code == "bad_type":
                continue  # reported as bad_step_id
            if (code, loc) in seen:
                continue
            seen.add((code, loc))
            if self.full:  # counted, not listed; checked before the message, which is the costly part
                self.unlist(code)
                continue
            message = _message(kind, loc, error, fields, self.suggest)
            if code == "missing_field":
                self.report(code, message, base + loc[:-1], check, position=bool(base))
            else:
                self.report(code, message, base + loc, check, key=(code == "unknown_key"))

    # -- compile -----------------------------------------------------------

    def compile(self, document: Document) -> Workflow:
        specs = []
        for check in self.steps:
            model = check.model
            refs = tuple(dict.fromkeys(check.refs))  # a valid step never refers to itself here
            inputs = tuple(InputBinding(name, path, spec.get("type"), spec.get("required", True))
                           for name, path, spec in check.inputs)
            specs.append(StepSpec(
                id=model.id, index=check.index, model=model, deps=refs, condition=check.condition,
                criteria=tuple(check.criteria), until=check.until, command=check.command,
                approval_message=check.approval_message, fix_command=check.fix_command,
                re_review_command=check.re_review_command, stdin=check.stdin, inputs=inputs,
                ref_args=check.ref_args, policy=failure_policy(model)))
        unresolved = [s.id for s in specs if s.model.library_step is not None and self.library is None]
        return Workflow(document, specs, self.source, unresolved_library=unresolved, warnings=list(self.warnings))


def _place(where: tuple) -> str:
    """Where an expression is written, as a person names it: `condition`, `success_criteria`, `loop.until`."""
    names = [part for part in where[2:] if isinstance(part, str)]
    return "`" + ".".join(names) + "`" if names else "the document"


def _label(raw: dict) -> str | None:
    value = raw.get("id")
    if value is None or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else str(value)


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" or ch in _BIDI for ch in text)


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


MAX_PROBLEMS = 1000  # a hostile document must not make the report itself unbounded
HINTS = 50  # difflib costs ~40 us a call: a document of thousands of typos gets hints for the first ones


def _trim(raw: Any, loc: tuple, kind: str) -> tuple:
    """Drop pydantic's union and alias tags from a location so it names a real path in the data."""
    out = []
    current = raw
    for k, element in enumerate(loc):
        last = k == len(loc) - 1
        if isinstance(current, dict) and element in current:
            out.append(element)
            current = current[element]
        elif isinstance(current, list) and isinstance(element, int) and 0 <= element < len(current):
            out.append(element)
            current = current[element]
        elif last and kind == "missing":
            out.append(element)
        elif element == "[key]":
            break
    return tuple(out)


_TYPE_WORDS = {
    "string_type": "a string", "int_type": "an integer", "float_type": "a number", "bool_type": "true or false",
    "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "int_from_float": "an integer",
}


def _message(kind: str, loc: tuple, error: dict, fields: frozenset, suggest) -> str:
    name = ".".join(str(part) for part in loc) or "the document"
    if kind == "extra_forbidden":
        key = loc[-1] if loc else "?"
        hint = suggest(str(key), fields) if len(loc) == 1 else ""
        return f"unknown key {key!r}{hint}; keys starting with x- are kept for tools"
    if kind == "missing":
        return f"`{name}` is required"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"`{name}` must be one of {expected}; got {error.get('input')!r}"
    if kind in _TYPE_WORDS:
        return f"`{name}` must be {_TYPE_WORDS[kind]}; got {_short(error.get('input'))}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"`{name}` {error['msg'].replace('Input should be', 'must be')}"
    if kind == "value_error":
        return f"`{name}` {str(error['msg']).removeprefix('Value error, ')}"
    return f"`{name}`: {error['msg']}"


def _short(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a {value.bit_length()}-bit integer"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
