"""A result never repeats a secret its agent was sent: secrets_hidden replaces each in its outputs, stdout and
error (a gateway that quotes the token it refuses, an API that echoes its key)."""

from engine.executors.base import SECRET_SHOWN, StepResult, secrets_hidden


def test_each_secret_is_replaced_wherever_the_result_holds_text():
    result = StepResult(ok=False, outputs={"said": ["token tok-123", {"tok-123": 5, "n": 7}]},
                        stdout="Bearer tok-123\n", error="tok-123 refused; key abc-long-key", error_code="agent_error",
                        tokens=3, cost=0.5)

    shown = secrets_hidden(result, ["tok-123", "abc-long-key"])

    assert shown.outputs == {"said": [f"token {SECRET_SHOWN}", {SECRET_SHOWN: 5, "n": 7}]}
    assert shown.stdout == f"Bearer {SECRET_SHOWN}\n"
    assert shown.error == f"{SECRET_SHOWN} refused; key {SECRET_SHOWN}"
    assert (shown.ok, shown.error_code, shown.tokens, shown.cost) == (False, "agent_error", 3, 0.5)


def test_a_secret_that_holds_another_is_replaced_whole_and_no_secret_changes_nothing():
    result = StepResult(ok=True, outputs={}, stdout="abc abcdef")
    assert secrets_hidden(result, ["abc", "abcdef"]).stdout == f"{SECRET_SHOWN} {SECRET_SHOWN}"
    assert secrets_hidden(result, ["", None]) is result


def test_a_model_name_repeating_a_secret_is_hidden_too():
    result = StepResult(ok=True, outputs={}, model="tok-123", input_tokens=2, output_tokens=1, tokens=3)
    shown = secrets_hidden(result, ["tok-123"])
    assert (shown.model, shown.input_tokens, shown.output_tokens) == (SECRET_SHOWN, 2, 1)
