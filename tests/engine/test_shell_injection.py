"""Values never become shell syntax (spec section 6; issue 9, finding 1), through the local runner.

Every hostile payload × quoting context × source (a run argument, an upstream
step's output) × template form runs as a real workflow: the payload would
create a marker file if any shell ran it, and the step prints the value,
which must come out exactly as given. The command the runner dispatched is
run again under bash too (what `sh` is on some systems), which evaluates
more than dash does.
"""

import shutil
import subprocess

import pytest
import yaml

from engine.interpreter import commands as cmd
from engine.report import report
from engine.runner import LocalRunner
from engine.validation import load_workflow, validate_source

PAYLOADS = {
    "command_substitution": "$(touch {m})",
    "backticks": "`touch {m}`",
    "semicolon": "x; touch {m}",
    "newline": "x\ntouch {m}",
    "pipe_and_or": "x | touch {m} && touch {m} || touch {m}",
    "double_quote_breakout": '"; touch {m}; echo "',
    "single_quote_breakout": "'; touch {m}; echo '",
    "both_quotes_breakout": "'\"; touch {m}; echo \"'",
    "heredoc_end": "x\nEOF\ntouch {m}\nEOF",
    "parameter_expansion": "${{HOME}} $HOME $FORGE_SECRET ${{FORGE_V1}} $1 $@",
    "backslashes": "a\\b\\\\c\\$(touch {m})\\",
    "glob": "* ? [a-z]*",
    "bash_arithmetic": "a[$(touch {m})]",
    "ansi_c_quote": "$'\\x41' $\"x\"",
    "option_like": "-n -e --help",
}

# The step's command, with {v} where the placeholder goes; and how the value comes out of it.
CONTEXTS = {
    "unquoted": ("printf '%s' {v}", lambda value: value),
    "double_quotes": ("printf '%s' \"<{v}>\"", lambda value: f"<{value}>"),
    "single_quotes": ("printf '%s' '<{v}>'", lambda value: f"<{value}>"),
    "heredoc": ("cat <<EOF\n<{v}>\nEOF", lambda value: f"<{value}>\n"),
    "heredoc_strip_tabs": ("cat <<-EOF\n\t<{v}>\n\tEOF", lambda value: f"<{value}>\n"),
    "command_substitution": ("printf '%s' \"$(printf '%s' {v})\"", lambda value: value.rstrip("\n")),
    "command_substitution_quoted": ("printf '%s' \"$(printf '%s' \"<{v}>\")\"", lambda value: f"<{value}>"),
    "backticks": ("printf '%s' \"`printf '%s' {v}`\"", lambda value: value.rstrip("\n")),
    "backticks_single_quotes": ("x=`printf '%s' '<{v}>'`; printf '%s' \"$x\"", lambda value: f"<{value}>"),
    "parameter_default": ("printf '%s' \"$${{UNSET_NAME:-{v}}}\"", lambda value: value),
    "assignment": ("x={v}; printf '%s' \"$x\"", lambda value: value),
    "argument_to_a_nested_shell": ("sh -c 'printf \"%s\" \"$1\"' _ {v}", lambda value: value),
}

SOURCES = {
    "run_argument": "args.v",
    "upstream_output": "up.v",
}

FORMS = {
    "dollar": "${{{path}}}",
    "braces": "{{{{ {path} }}}}",
}


def workflow(command: str, value: str, source: str) -> str:
    steps = []
    if source == "upstream_output":  # a mock's outputs stand for an LLM's or a gateway's reply
        steps.append({"id": "up", "agent": "mock", "command": "reply", "mock": {"outputs": {"v": value}}})
    steps.append({"id": "show", "agent": "shell", "command": command,
                  **({"depends_on": ["up"]} if source == "upstream_output" else {})})
    return yaml.safe_dump({"name": "injection", "args": {"v": {"type": "string"}}, "steps": steps})


def dispatched_under(shell: str, dispatch: cmd.Dispatch, cwd) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd), **dispatch.env}
    return subprocess.run([shell, "-c", dispatch.command], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("payload", PAYLOADS)
def test_no_payload_executes_and_the_value_is_printed_verbatim(payload, context, source, form, tmp_path):
    marker = tmp_path / "pwned"
    value = PAYLOADS[payload].format(m=marker)
    template, printed = CONTEXTS[context]
    placeholder = FORMS[form].format(path=SOURCES[source])
    command = template.format(v=placeholder)
    dispatches = []
    runner = LocalRunner(load_workflow(workflow(command, value, source)),
                         args={"v": value} if source == "run_argument" else {"v": "unused"}, fast=True,
                         workdir=str(tmp_path),
                         on_command=lambda c: dispatches.append(c) if isinstance(c, cmd.Dispatch) else None)
    outcome = report(runner.run())

    assert not marker.exists(), f"the payload ran: {command!r}"
    assert outcome["status"] == "completed", outcome["steps"]["show"]
    assert outcome["steps"]["show"]["stdout"] == printed(value)
    shown = [d for d in dispatches if d.step == "show"][0]
    assert value not in shown.command
    if shutil.which("bash"):
        result = dispatched_under("bash", shown, tmp_path)
        assert not marker.exists(), f"the payload ran under bash: {shown.command!r}"
        assert (result.returncode, result.stdout) == (0, printed(value)), result.stderr


# -- refused at validation: where the value would be parsed again ------------------------------------------

REFUSED = {
    "sh_c_double_quotes": 'sh -c "echo ${args.v}"',
    "sh_c_single_quotes": "sh -c 'echo ${args.v}'",
    "bash_lc": "bash -lc \"echo {{ args.v }}\"",
    "env_sh_c": "env -i A=1 sh -c \"echo ${args.v}\"",
    "xargs_sh_c": "echo x | xargs sh -c \"echo ${args.v}\"",
    "sh_c_after_options": "sh -e -o errexit -c \"echo ${args.v}\"",
    "nested_in_substitution": 'sh -c "$(echo ${args.v})"',
    "zsh_dash_ksh": "zsh -c \"${args.v}\"; dash -c \"${args.v}\"; ksh -c \"${args.v}\"",
    "su_c": "su -c \"echo ${args.v}\" nobody",
    "eval": 'eval "echo ${args.v}"',
    "eval_in_substitution": 'x=$(eval "echo ${args.v}")',
    "trap": "trap 'echo ${args.v}' EXIT",
    "piped_into_sh": 'printf "%s" "${args.v}" | sh',
    "heredoc_into_bash": "bash <<EOF\necho ${args.v}\nEOF",
    "herestring_into_sh": 'sh <<< "${args.v}"',
    "arithmetic_expansion": "echo $((${args.v} + 1))",
    "arithmetic_command": "(( ${args.v} > 1 ))",
    "let": "let n=${args.v}",
    "conditional_arithmetic": "[[ ${args.v} -eq 1 ]] && echo one",
    "declare_integer": "declare -i n=${args.v}",
    "array_index": 'echo "$${a[${args.v}]}"',
    "substring_offset": 'echo "$${s:${args.v}}"',
    "read_into_a_name": "read ${args.v} < /dev/null",
    "printf_v": "printf -v ${args.v} x",
    "test_v": "test -v ${args.v}",
    "fd_duplication": "echo x >&${args.v}",
    "quoted_heredoc": "cat <<'EOF'\n${args.v}\nEOF",
    "heredoc_delimiter": "cat <<${args.v}\nx\n",
    "backslash_before": "echo \\${args.v}",
    "command_named_by_a_variable": 'c=eval; $c "${args.v}"',
    "command_named_by_a_substitution": '$(echo sh) -c "${args.v}"',
    "wrapper_running_a_variable": "env $tool ${args.v}",
    "value_split_into_a_command": "$(printf '%s' ${args.v}) x",
    "value_beside_an_expansion_in_the_name": "$${A:-eval x}${args.v}",
}

ACCEPTED = {
    "argument_of_sh_c": "sh -c 'echo \"$1\"' _ \"${args.v}\"",
    "script_in_quoted_heredoc": "sh -s -- \"${args.v}\" <<'EOF'\necho \"$1\"\nEOF",
    "checked_number": "n=${args.v}; case $n in ''|*[!0-9]*) exit 2;; esac; echo $((n + 1))",
    "variable_given_to_eval_by_name": "v=${args.v}; eval 'echo \"$v\"'",
    "a_shell_word_as_data": "grep -c sh ${args.v}",
    "parameter_default": 'echo "$${UNSET:-${args.v}}"',
    "value_in_a_comment": "echo hi # not ${args.v}",
    "heredoc_into_cat": "cat <<EOF\n${args.v}\nEOF",
    "value_as_the_program_name": "${args.v} --version",
    "variable_as_an_argument": 'echo "$HOME" ${args.v}',
    "assignment_before_the_command": "A=$B LANG=${args.v} printf '%s' x",
}


def validate_command(command: str, agent: str = "shell", shell_agents=None):
    document = yaml.safe_dump({"name": "w", "args": {"v": {"type": "string"}},
                               "steps": [{"id": "s", "agent": agent, "command": command}]})
    return validate_source(document, **({} if shell_agents is None else {"shell_agents": shell_agents}))


@pytest.mark.parametrize("command", REFUSED.values(), ids=REFUSED.keys())
def test_a_placeholder_a_nested_shell_or_bash_would_parse_again_is_refused(command):
    report_ = validate_command(command)
    problems = [p for p in report_.problems if p.code == "expression_error"]
    assert problems and report_.workflow is None, report_.problems
    assert all(p.step == "s" and p.line is not None for p in problems)
    assert "${args.v}" in problems[0].message


@pytest.mark.parametrize("command", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_safe_way_to_write_each_is_accepted(command):
    assert validate_command(command).problems == []


def test_the_message_says_how_to_pass_the_value_to_a_nested_shell():
    [problem] = validate_command('sh -c "echo ${args.v}"').problems
    assert "sh -c" in problem.message and "sh -c 'echo \"$1\"' _ \"${args.v}\"" in problem.message


def test_the_refusal_applies_to_the_agents_named_as_shell_agents_only():
    assert validate_command('sh -c "echo ${args.v}"', agent="mock").problems == []
    assert validate_command('sh -c "echo ${args.v}"', agent="box", shell_agents=("box",)).problems != []
    assert validate_command('sh -c "echo ${args.v}"', agent="shell", shell_agents=("box",)).problems == []


def test_a_shell_agent_validation_did_not_know_still_refuses_at_dispatch(tmp_path):
    from engine.interpreter import Options
    source = yaml.safe_dump({"name": "w", "args": {"v": {"type": "string"}},
                             "steps": [{"id": "s", "agent": "shell", "command": 'sh -c "echo ${args.v}"'}]})
    marker = tmp_path / "pwned"
    workflow_ = validate_source(source, shell_agents=()).workflow
    outcome = LocalRunner(workflow_, args={"v": f"$(touch {marker})"}, fast=True,
                          options=Options(shell_agents=("shell",))).run()
    step = report(outcome)["steps"]["s"]
    assert (step["status"], step["error_code"]) == ("failed", "template_error")
    assert "nested shell" in step["error"]
    assert not marker.exists()
