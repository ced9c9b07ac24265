"""engine/shellwords.py: the quoting context of each placeholder, and the promise that a context it misjudges
never runs a value (hypothesis writes the commands).

The commands never print their environment into a shell (`env | sh`): the
values are in the environment for the whole command, so that runs them, as
docs/engine.md says.
"""

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.expressions import ExpressionError, Scope
from engine.templates import TemplateError, parse_template


def rendered(source: str) -> str:
    return parse_template(source).render_shell(Scope(variables={"x": "X", "y": "Y"}))[0]


@pytest.mark.parametrize(("source", "command"), [
    ("echo ${x}", 'echo "$FORGE_V1"'),
    ('echo "a${x}b"', 'echo "a${FORGE_V1}b"'),
    ("echo 'a${x}b'", "echo 'a'\"$FORGE_V1\"'b'"),
    ("echo $'a${x}b'", "echo $'a'\"$FORGE_V1\"$'b'"),
    ("echo $(echo ${x})", 'echo $(echo "$FORGE_V1")'),
    ('echo "$(echo "${x}")"', 'echo "$(echo "${FORGE_V1}")"'),
    ("echo `echo ${x}`", 'echo `echo "$FORGE_V1"`'),
    ("echo \"`echo '${x}'`\"", "echo \"`echo ''\"$FORGE_V1\"''`\""),
    ("cat <<EOF\n${x}\nEOF\necho ${y}", 'cat <<EOF\n${FORGE_V1}\nEOF\necho "$FORGE_V2"'),
    ("cat <<-EOF\n\t'${x}'\n\tEOF", "cat <<-EOF\n\t'${FORGE_V1}'\nEOF".replace("\nEOF", "\n\tEOF")),
    ("echo $${A:-${x}} \"$${A:-${y}}\"", 'echo ${A:-"$FORGE_V1"} "${A:-${FORGE_V2}}"'),
    ("echo it\\'s ${x} # it's ${y}", 'echo it\\\'s "$FORGE_V1" # it\'s "$FORGE_V2"'),
    ("echo {{ x }} ${x}", 'echo "$FORGE_V1" "$FORGE_V1"'),
])
def test_each_placeholder_is_referenced_in_the_form_its_context_needs(source, command):
    assert rendered(source) == command


def test_a_command_without_placeholders_is_left_as_written():
    template = parse_template("echo 'a' \"b\" $(c) `d` $${e}")
    assert template.render_shell(Scope()) == ("echo 'a' \"b\" $(c) `d` ${e}", {})


# -- property: whatever the author writes, a value never runs -----------------------------------------------

TOKENS = ["echo ", "printf '%s\\n' ", " ", "'", '"', "$(", ")", "`", "\\", ";", "|", "&&", "\n", "#", "${x}",
          "{{ x }}", "${y}", "$${A:-", "}", "sh -c ", "eval ", "cat", "a", "$((", "))", "$'", "<<<", "<<EOF\n",
          "\nEOF\n", "<<'EOF'\n", "<<-EOF\n", "\n\tEOF\n", "bash ", "[[ ", " ]]", "-eq ", "(", "-s ", ">", ">&",
          "2>&1", "read ", "n=", "$${#", "[", "]", "$${s:", "let ", "test -v ", "declare -i ", "trap ", "<(",
          "| bash", "for ", "((", "case ", " in ", "esac", ";;", "'\\''", "c=eval; ", "$c ", "sudo ",
          "$${A:-eval }", "$(echo eval) ", "command ", "xargs "]


@pytest.mark.skipif(not (shutil.which("dash") or shutil.which("sh")), reason="needs a POSIX shell")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=14))
def test_a_value_never_runs_in_any_command_the_scanner_accepts(tmp_path, tokens):
    source = "".join(tokens)
    marker = tmp_path / "pwned"
    values = {"x": f"$(touch {marker})`touch {marker}`;touch {marker}\ntouch {marker} a[$(touch {marker})]",
              "y": f"a[$(touch {marker})]"}
    try:
        command, env = parse_template(source).render_shell(Scope(variables=values))
    except (ExpressionError, TemplateError):
        return  # not a template, or refused: nothing runs
    for shell in filter(None, {shutil.which("sh"), shutil.which("bash")}):
        try:
            subprocess.run([shell, "-c", command], env={"PATH": os.defpath, **env}, cwd=tmp_path, timeout=10,
                           stdin=subprocess.DEVNULL, capture_output=True)
        except subprocess.TimeoutExpired:
            pass
        assert not marker.exists(), f"{shell} ran a value of {source!r} rendered as {command!r}"
