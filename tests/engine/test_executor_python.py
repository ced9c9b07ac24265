"""The `python` agent: allow-listed callables called in-process, and loading them by dotted path."""

import json
import threading

import pytest

from engine.executors import PythonExecutor, StepRequest, StepResult
from engine.executors.python_call import PythonCall, load_callables
from engine.model import Step


def request(command, **extra):
    spec = Step.model_validate({"id": "compute", "agent": "python", "command": command})
    return StepRequest(run_id="run-1", step="compute", attempt=2, agent="python", command=command, spec=spec,
                       **extra)


def run(allowed, command, *, cancel=None, **extra):
    return PythonExecutor(allowed).execute(request(command, **extra), cancel or threading.Event())


def test_an_allowed_callable_gets_the_call_and_its_dict_becomes_the_outputs():
    seen = []

    def score(call):
        seen.append(call)
        return {"total": call.inputs["a"] + call.inputs["b"], "note": "café"}

    cancel = threading.Event()
    result = run({"score": score}, "score", cancel=cancel, inputs={"a": 1, "b": 2}, stdin="text", iteration=3)
    assert result.ok and result.outputs == {"total": 3, "note": "café"}
    assert json.loads(result.stdout) == {"total": 3, "note": "café"} and "café" in result.stdout
    assert seen == [PythonCall(run_id="run-1", step="compute", attempt=2, iteration=3, inputs={"a": 1, "b": 2},
                               stdin="text", cancel=cancel)]


def test_the_call_is_frozen():
    call = PythonCall("r", "s", 1, 0, {}, None, threading.Event())
    with pytest.raises(AttributeError):
        call.step = "other"


def test_a_name_not_in_the_allow_list_is_refused_and_the_allowed_names_are_listed():
    called = []
    result = run({"b": called.append, "a": called.append}, "os.system")
    assert not result.ok and result.error_code == "agent_error"
    assert result.error == "python callable 'os.system' is not allowed; allowed: a, b"
    assert called == []


def test_at_most_ten_allowed_names_are_listed():
    allowed = {f"f{n:02}": print for n in range(15)}
    result = run(allowed, "missing")
    assert "f09" in result.error and "f10" not in result.error and "5 more" in result.error


def test_an_empty_allow_list_says_nothing_is_allowed():
    assert run({}, "anything").error.endswith("allowed: none")


def test_surrounding_whitespace_in_the_command_is_ignored():
    assert run({"f": lambda call: "hi"}, " f\n").stdout == "hi"


def test_a_string_is_the_stdout_with_no_outputs():
    result = run({"f": lambda call: "line 1\nline 2"}, "f")
    assert result == StepResult(ok=True, outputs={}, stdout="line 1\nline 2")


def test_none_is_success_with_no_outputs_and_empty_stdout():
    assert run({"f": lambda call: None}, "f") == StepResult(ok=True, outputs={}, stdout="")


def test_a_step_result_is_used_as_is():
    given = StepResult(ok=False, error="vendor down", error_code="rate_limited", tokens=7)
    assert run({"f": lambda call: given}, "f") is given


@pytest.mark.parametrize("value, type_name", [(42, "int"), ([1], "list"), (b"x", "bytes")])
def test_any_other_return_type_fails_naming_the_type(value, type_name):
    result = run({"f": lambda call: value}, "f")
    assert not result.ok and result.error_code == "agent_error"
    assert f"returned {type_name}" in result.error


def test_outputs_that_are_not_json_fail():
    result = run({"f": lambda call: {"when": object()}}, "f")
    assert not result.ok and "not JSON" in result.error


def test_outputs_with_a_non_string_key_fail():
    result = run({"f": lambda call: {1: "one"}}, "f")
    assert not result.ok and "non-string key 1" in result.error


def test_an_exception_fails_with_its_type_and_message_and_no_traceback():
    def broken(call):
        raise KeyError("missing 'pr'")

    result = run({"broken": broken}, "broken")
    assert not result.ok and result.error_code == "agent_error"
    assert result.error == "KeyError: \"missing 'pr'\""
    assert "Traceback" not in result.error


def test_a_long_exception_message_is_cut_to_500_characters():
    def broken(call):
        raise ValueError("x" * 5000)

    assert len(run({"broken": broken}, "broken").error) == len("ValueError: ") + 500


def test_a_cancel_set_before_the_call_skips_it():
    called = []
    cancel = threading.Event()
    cancel.set()
    result = run({"f": called.append}, "f", cancel=cancel)
    assert result.error_code == "cancelled" and called == []


# -- load_callables ----------------------------------------------------------------------------


def sample_callable(call: PythonCall):
    return {"double": call.inputs["n"] * 2}


def test_load_callables_imports_dotted_paths():
    loaded = load_callables(["json.dumps", "os.path.join"])
    assert loaded == {"json.dumps": json.dumps, "os.path.join": __import__("os").path.join}


def test_loaded_callables_run_under_their_dotted_name():
    loaded = load_callables(["tests.engine.test_executor_python.sample_callable"])
    result = run(loaded, "tests.engine.test_executor_python.sample_callable", inputs={"n": 4})
    assert result.ok and result.outputs == {"double": 8}


@pytest.mark.parametrize("path, says", [
    ("dumps", "is not a dotted path"),
    ("json.", "is not a dotted path"),
    ("json..dumps", "is not a dotted path"),
    ("no_such_module_xyz.f", "cannot import module 'no_such_module_xyz'"),
    ("json.no_such_function", "has no attribute 'no_such_function'"),
    ("json.__doc__", "not a callable"),
])
def test_load_callables_refuses_a_bad_path_with_a_clear_message(path, says):
    with pytest.raises(ValueError) as caught:
        load_callables([path])
    assert says in str(caught.value)


def test_an_exception_without_a_message_is_named_by_its_type():
    def broken(call):
        raise RuntimeError

    assert run({"broken": broken}, "broken").error == "RuntimeError"
