"""One reading of a gateway's result, for its synchronous reply and its callback alike.

A gateway's (or a model API's) output is hostile input, and what is read
here ends up in database columns on SQLite and PostgreSQL, so one set of
rules holds on both paths:

- The body is UTF-8 JSON, one object, nested at most `MAX_DEPTH` levels,
  no key given twice (parsers disagree on which copy wins).
- `null` stands for an absent field; unknown fields are ignored and their
  names logged, so gateways can add their own.
- `ok` absent means success unless `error` or `error_code` is given.
- `outputs` is an object ({} for a success without one); `stdout` absent
  means the outputs as JSON ("" for a failure without outputs).
- `tokens` (the total), `input_tokens` and `output_tokens` are integers
  0..`MAX_TOKENS`; with only the split given the total is its sum, and a
  total given with the split must be that sum (with one part, at least it):
  inconsistent counts are malformed, as a wrong type is, since budgets and
  the spend pages add them up; a total with one part gives the other as the
  difference, a total alone leaves the split 0 (unknown). `model` (the model that answered) is a
  printable string of 1..`MAX_MODEL` characters. `cost` is a finite number
  0..`MAX_COST`; `error` and `error_code` are at most 10,000 and 64
  characters; `outputs` (as JSON) and `stdout` at most 1 MiB.
- The ids fit the database's columns: `run_id` 64 bits, `attempt` and
  `iteration` 32 bits (PostgreSQL's integer). A callback must name them; a
  reply may echo them and then must name its own call.
- No stored text holds a NUL or an unpaired surrogate (PostgreSQL refuses
  both), and every number in the outputs is finite and an integer fits in
  64 bits.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any

from engine.executors.base import StepRequest, StepResult

log = logging.getLogger(__name__)

MAX_DEPTH = 64
MAX_TOKENS = 10**12
MAX_COST = 1_000_000.0
MAX_TEXT = 1_048_576
MAX_ERROR = 10_000
MAX_CODE = 64
MAX_MODEL = 128  # TokenEvent.model's column
MAX_STEP = 64
MAX_RUN_ID = 2**63 - 1
MAX_ATTEMPT = 2**31 - 1
_MAX_INT = 2**63
_LOGGED_NAMES = 10
KNOWN = frozenset({"run_id", "step", "attempt", "iteration", "ok", "outputs", "stdout", "error", "error_code",
                   "tokens", "cost", "model", "input_tokens", "output_tokens"})


class Malformed(ValueError):
    """A body that is not a gateway result; `problems` lists (field, what is wrong), the field "body" for all of it."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{name}: {text}" for name, text in problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class GatewayResult:
    """A result and the call it names (None where a reply did not echo it)."""

    result: StepResult
    run_id: int | str | None = None
    step: str | None = None
    attempt: int | None = None
    iteration: int = 0


class _Repeated(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    built = dict(pairs)
    if len(built) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise _Repeated(f"the key {show_name(repeated)} appears twice in one object")
    return built


def load_json(raw: bytes | str) -> Any:
    """`raw` parsed as JSON; NaN and Infinity become floats for the field checks to refuse.

    Raises:
        Malformed: not UTF-8, not JSON, nested too deeply, or a key given twice.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise Malformed([("body", "is not JSON: it is not UTF-8 text")]) from None
    if not text.strip():
        raise Malformed([("body", "is empty; send a JSON object")])
    try:
        return json.loads(text, object_pairs_hook=_object)
    except _Repeated as exc:
        raise Malformed([("body", str(exc))]) from None
    except RecursionError:
        raise Malformed([("body", f"nests deeper than {MAX_DEPTH} levels")]) from None
    except ValueError as exc:
        raise Malformed([("body", f"is not JSON: {str(exc)[:200]}")]) from None


def read_result(data: Any, call: StepRequest | None = None) -> GatewayResult:
    """The result a parsed body stands for.

    Args:
        data: the parsed body.
        call: the call a synchronous reply answers; None for a callback, which must name its call.

    Raises:
        Malformed: every problem found, field by field.
    """
    if not isinstance(data, dict):
        raise Malformed([("body", f"must be a JSON object, got {kind(data)}")])
    problems: list[tuple[str, str]] = []
    field = {name: data.get(name) for name in KNOWN}
    ignored = [name for name in data if name not in KNOWN]
    if ignored:
        log.info("a gateway result carried %d unknown field(s), ignored: %s", len(ignored),
                 ", ".join(show_name(name) for name in ignored[:_LOGGED_NAMES]))
    ids = _ids(field, call, problems)
    ok = field["ok"]
    if ok is not None and type(ok) is not bool:
        problems.append(("ok", f"must be a boolean, got {kind(ok)}"))
    outputs = field["outputs"]
    if outputs is not None:
        problem = outputs_problem(outputs)
        if problem:
            problems.append(("outputs", problem))
    for name, limit in (("stdout", MAX_TEXT), ("error", MAX_ERROR), ("error_code", MAX_CODE)):
        problem = text_problem(field[name], limit)
        if problem:
            problems.append((name, problem))
    _tokens(field, problems)
    if (problem := model_problem(field["model"])) is not None:
        problems.append(("model", problem))
    cost = field["cost"]
    if cost is not None:
        if type(cost) not in (int, float) or (math.isfinite(cost) and cost < 0):
            problems.append(("cost", f"must be a non-negative number, got {kind(cost)}"))
        elif not math.isfinite(cost):
            problems.append(("cost", f"must be a finite number, got {kind(cost)}"))
        elif cost > MAX_COST:
            problems.append(("cost", f"must be at most {MAX_COST:g}, got {kind(cost)}"))
    if problems:
        raise Malformed(problems)
    return GatewayResult(_result(field), *ids)


def _result(field: dict[str, Any]) -> StepResult:
    error, code = field["error"], field["error_code"]
    ok = field["ok"] if field["ok"] is not None else (error is None and code is None)
    outputs = field["outputs"]
    if outputs is None and ok:
        outputs = {}
    stdout = field["stdout"]
    if stdout is None:
        stdout = json.dumps(outputs, ensure_ascii=False) if outputs is not None else ""
    if not ok:
        error = error or "the gateway reported a failure without a message"
        code = code or "agent_error"
    total, into, out = field["tokens"], field["input_tokens"], field["output_tokens"]
    if total is None:
        total = (into or 0) + (out or 0)
    elif (into is None) != (out is None):  # one part and the total: the other part is the difference
        into, out = (total - out, out) if into is None else (into, total - into)
    return StepResult(ok=ok, outputs=outputs, stdout=stdout, error=error, error_code=code, tokens=total,
                      cost=float(field["cost"] or 0.0), model=field["model"], input_tokens=into or 0,
                      output_tokens=out or 0)


def _tokens(field: dict[str, Any], problems: list) -> None:
    """The counts' types and bounds, then their agreement: the total is the split's sum."""
    counts = {}
    for name in ("tokens", "input_tokens", "output_tokens"):
        value = field[name]
        if value is None:
            continue
        if type(value) is not int or value < 0:
            problems.append((name, f"must be a non-negative integer, got {kind(value)}"))
        elif value > MAX_TOKENS:
            problems.append((name, f"must be at most {MAX_TOKENS}, got {kind(value)}"))
        else:
            counts[name] = value
    if len(counts) != sum(field[name] is not None for name in ("tokens", "input_tokens", "output_tokens")):
        return
    split = counts.get("input_tokens", 0) + counts.get("output_tokens", 0)
    if "tokens" not in counts:
        if split > MAX_TOKENS:
            problems.append(("tokens", f"input_tokens + output_tokens must be at most {MAX_TOKENS}"))
    elif "input_tokens" in counts and "output_tokens" in counts:
        if counts["tokens"] != split:
            problems.append(("tokens", f"must be input_tokens + output_tokens ({split}) when all three are "
                                       f"given, got {kind(counts['tokens'])}"))
    elif counts["tokens"] < split:
        part = "input_tokens" if "input_tokens" in counts else "output_tokens"
        problems.append(("tokens", f"must be at least {part} ({split}), got {kind(counts['tokens'])}"))


def model_problem(value: Any) -> str | None:
    """What is wrong with the name of the model that answered, or None (also for an absent one)."""
    if value is None:
        return None
    if type(value) is not str:
        return f"must be a string, got {kind(value)}"
    if not 1 <= len(value) <= MAX_MODEL:
        return f"must be 1 to {MAX_MODEL} characters, got {len(value)}"
    if not value.isprintable() or not storable(value):
        return "must be printable text (no control character, NUL or unpaired surrogate)"
    return None


def _ids(field: dict[str, Any], call: StepRequest | None, problems: list) -> tuple:
    run_id, step, attempt, iteration = field["run_id"], field["step"], field["attempt"], field["iteration"]
    if call is not None:
        # a reply answers the call it was sent for: an echo that names another call is a gateway's mistake
        for name, echoed, own in (("run_id", run_id, call.run_id), ("step", step, call.step),
                                  ("attempt", attempt, call.attempt), ("iteration", iteration, call.iteration)):
            same = str(echoed) == str(own) if name == "run_id" else (type(echoed) is type(own) and echoed == own)
            if echoed is not None and not same:
                problems.append((name, f"names another call ({_short(echoed)}); this call's is {own!r}"))
        return call.run_id, call.step, call.attempt, call.iteration
    if isinstance(run_id, str) and run_id.isascii() and run_id.isdigit() and len(run_id) <= 19:
        run_id = int(run_id)  # dispatch sends the run id as text; echoing it back is answering correctly
    if run_id is None:
        problems.append(("run_id", "is required"))
    elif type(run_id) is not int or not 1 <= run_id <= MAX_RUN_ID:
        problems.append(("run_id", f"must be an integer from 1 to {MAX_RUN_ID}, got {kind(run_id)}"))
    if step is None:
        problems.append(("step", "is required"))
    elif type(step) is not str or not 1 <= len(step) <= MAX_STEP or not storable(step):
        problems.append(("step", f"must be a step id of 1 to {MAX_STEP} characters, got {kind(step)}"))
    if attempt is None:
        problems.append(("attempt", "is required"))
    elif type(attempt) is not int or not 1 <= attempt <= MAX_ATTEMPT:
        problems.append(("attempt", f"must be an integer from 1 to {MAX_ATTEMPT}, got {kind(attempt)}"))
    if iteration is not None and (type(iteration) is not int or not 0 <= iteration <= MAX_ATTEMPT):
        problems.append(("iteration", f"must be an integer from 0 to {MAX_ATTEMPT}, got {kind(iteration)}"))
    return run_id, step, attempt, iteration or 0


def text_problem(value: Any, limit: int) -> str | None:
    """What is wrong with an optional text field, or None."""
    if value is None:
        return None
    if type(value) is not str:
        return f"must be a string, got {kind(value)}"
    if len(value) > limit:
        return f"must be at most {limit} characters, got {len(value)}"
    if not storable(value):
        return "holds a NUL character or an unpaired surrogate, which cannot be stored"
    return None


def outputs_problem(outputs: Any) -> str | None:
    """What is wrong with an outputs object, or None: its type, depth, numbers, texts and size."""
    if not isinstance(outputs, dict):
        return f"must be an object, got {kind(outputs)}"
    stack: list[tuple[Any, int]] = [(outputs, 1)]
    while stack:  # no recursion: the depth is what is being checked
        value, depth = stack.pop()
        if isinstance(value, dict):
            if depth > MAX_DEPTH:
                return f"nest deeper than {MAX_DEPTH} levels"
            for key, item in value.items():
                if not storable(key):
                    return "hold a key with a NUL character or an unpaired surrogate"
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            if depth > MAX_DEPTH:
                return f"nest deeper than {MAX_DEPTH} levels"
            stack.extend((item, depth + 1) for item in value)
        elif type(value) is float and not math.isfinite(value):
            return "hold a number that is not finite (NaN or Infinity)"
        elif type(value) is int and not -_MAX_INT <= value < _MAX_INT:
            return "hold an integer that does not fit in 64 bits"
        elif type(value) is str and not storable(value):
            return "hold a string with a NUL character or an unpaired surrogate"
    size = len(json.dumps(outputs, ensure_ascii=False).encode("utf-8"))
    if size > MAX_TEXT:
        return f"are larger than 1 MiB as JSON ({size} bytes)"
    return None


def storable(text: str) -> bool:
    """Whether both databases can store `text`: no NUL, no unpaired surrogate."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """`text` with what a database cannot store replaced: for messages quoting a hostile body."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def show_name(name: str) -> str:
    """A field name as it may appear in a log or a message: quoted, cut, cleaned."""
    return repr(clean_text(name[:40]) + ("…" if len(name) > 40 else ""))


def kind(value: Any) -> str:
    """What a JSON value is, with a short number shown: "an integer (-1)", "an array"."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    described = names.get(type(value), type(value).__name__)
    if type(value) is int and abs(value) >= 10**30:
        return "a very large integer"
    if type(value) in (int, float):
        return f"{described} ({value})"
    return described


def _short(value: Any) -> str:
    return clean_text(repr(value)[:40]) if type(value) in (str, int, float, bool) else kind(value)
