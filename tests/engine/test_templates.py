"""`${...}` / `{{ ... }}` templates (spec sections 6 and 13): rendering, errors, values of shell commands."""

import subprocess

import pytest

from engine.expressions import ExpressionError, Scope
from engine.templates import TemplateError, parse_template, to_text

SCOPE = Scope(
    step_ids={"s", "a", "later"},
    outputs={"s": {"x": 42, "ratio": 2.5, "ok": True, "no": False, "none": None, "name": "forge",
                   "obj": {"k": "v", "n": [1, 2]}, "list": [1, "x", None], "word": "café"}},
    stdout={"a": "hello\nworld\n"},
    variables={"region": "eu"},
    args={"vendor": "acme"},
    run={"id": "run-7", "started_at": "2024-01-01T00:00:00Z"},
)


def render(source, scope=SCOPE):
    return parse_template(source).render(scope)


def run_shell(source, scope, cwd=None):
    """Render for a shell agent and run it the way the shell executor does: the values as variables."""
    command, env = parse_template(source).render_shell(scope)
    result = subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=cwd, timeout=10,
                            env={"PATH": "/usr/bin:/bin", **env})
    return command, result


@pytest.mark.parametrize("dollar, braces", [
    ("${s.x}", "{{ s.x }}"), ("${s.x}", "{{s.x}}"), ("${ s.x }", "{{  s.x  }}"),
    ("${s.outputs.name}", "{{ s.outputs.name }}"), ("${$s.name}", "{{ $s.name }}"),
    ("${vars.region}", "{{ vars.region }}"), ("${args.vendor}", "{{ args.vendor }}"),
    ("${run.id}", "{{ run.id }}"), ("${region}", "{{ region }}"),
])
def test_dollar_and_double_brace_markers_render_the_same(dollar, braces):
    assert render(f"<{dollar}>") == render(f"<{braces}>")
    assert render(f"<{dollar}>") != f"<{dollar}>"


@pytest.mark.parametrize("source, expected", [
    ("n=${s.x}", "n=42"),
    ("r=${s.ratio}", "r=2.5"),
    ("${s.ok}/${s.no}", "true/false"),
    ("v=${s.none}", "v=null"),
    ("${s.obj}", '{"k": "v", "n": [1, 2]}'),
    ("${s.list}", '[1, "x", null]'),
    ("${s.name}", "forge"),
    ("${s.word}", "café"),
    ("${s.list.length} items", "3 items"),
    ("in ${vars.region} for ${args.vendor} (${run.id})", "in eu for acme (run-7)"),
])
def test_values_render_json_like(source, expected):
    assert render(source) == expected


@pytest.mark.parametrize("value, text", [
    (42, "42"), (2.5, "2.5"), (-1, "-1"), (True, "true"), (False, "false"), (None, "null"),
    ("plain", "plain"), ({"a": 1}, '{"a": 1}'), ([1, "b"], '[1, "b"]'), ({"é": "ü"}, '{"é": "ü"}'),
])
def test_to_text_renders_each_kind_of_value(value, text):
    assert to_text(value) == text


def test_a_step_stdout_renders_verbatim():
    assert render("got: ${a.stdout}") == "got: hello\nworld\n"
    assert render("got: {{ a.stdout }}") == "got: hello\nworld\n"


@pytest.mark.parametrize("source", [
    "${nobody.x}", "{{ nobody.x }}", "${s.missing}", "${s.x.deeper}", "${vars.nope}", "${args.region}",
    "${later.stdout}", "${later.outputs.x}", "${unknown_variable}", "${s.list.9}",
])
def test_an_unresolved_path_is_a_template_error_never_an_empty_string(source):
    with pytest.raises(TemplateError):
        render(f"echo {source}")


def test_the_template_error_names_the_path_that_did_not_resolve():
    with pytest.raises(TemplateError, match=r"nobody\.outputs\.x"):
        render("echo ${nobody.outputs.x}")


def test_a_path_that_resolves_to_null_renders_null_not_an_error():
    assert render("[${s.none}] [{{ s.none }}] [${s.list.2}]") == "[null] [null] [null]"


@pytest.mark.parametrize("source, expected", [
    ("cost: $${s.x}", "cost: ${s.x}"),
    ("$${HOME} and ${s.x}", "${HOME} and 42"),
    ("$${", "${"),
])
def test_double_dollar_brace_renders_a_literal_dollar_brace(source, expected):
    assert render(source) == expected


def test_an_escaped_marker_is_not_a_path_of_the_template():
    template = parse_template("${s.x} {{ a.stdout }} $${later.outputs.y}")
    assert [path.text() for path in template.paths] == ["s.x", "a.stdout"]


@pytest.mark.parametrize("source", ["no markers", "$HOME and $1", "a } b }}", "price: $5", "{ single }", ""])
def test_text_without_markers_renders_unchanged(source):
    assert render(source) == source


def test_a_rendered_value_holding_a_marker_is_not_rendered_again():
    scope = Scope(variables={"a": "${b}", "c": "{{ b }}", "b": "secret"})
    assert render("x ${a} {{ c }}", scope) == "x ${b} {{ b }}"


@pytest.mark.parametrize("source", [
    "echo ${s.x", "echo {{ s.x", "echo {{ s.x }", "${", "{{",
    "${a b}", "${}", "{{ }}", "{{ 1 }}", "${a == b}", "{{ 'x' }}", "${s.x + 1}", "${contains(a, b)}",
])
def test_an_unclosed_marker_or_non_path_content_is_a_parse_error(source):
    with pytest.raises(ExpressionError):
        parse_template(source)


HOSTILE = [
    "a; echo pwned",
    "$(echo pwned)",
    "`echo pwned`",
    "it's \"quoted\"",
    "'; echo pwned; '",
    "line one\nline two",
    "${x}",
    "{{ x }}",
    "$HOME",
    "*",
    "-n",
    "a | cat > /dev/null && echo pwned",
    "back\\slash",
    "",
    "   spaced   ",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_reaches_a_shell_command_as_one_literal_argument(value, tmp_path):
    scope = Scope(variables={"v": value, "x": "EXPANDED"})
    command, result = run_shell("printf '%s|' ${v} {{ v }}", scope, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{value}|{value}|"
    assert list(tmp_path.iterdir()) == []
    assert value not in command or value in ("", " ", "*", "-n")  # the value is not in the command text


def test_a_shell_command_refers_to_its_values_and_keeps_the_authors_text():
    scope = Scope(variables={"obj": {"k": "it's"}, "n": 7})
    command, env = parse_template("n=${n}; echo $((n + 1)); printf '%s' ${obj}").render_shell(scope)
    assert command == 'n="$FORGE_V1"; echo $((n + 1)); printf \'%s\' "$FORGE_V2"'
    assert env == {"FORGE_V1": "7", "FORGE_V2": '{"k": "it\'s"}'}
    _, result = run_shell("n=${n}; echo $((n + 1)); printf '%s' ${obj}", scope)
    assert result.stdout == "8\n" + '{"k": "it\'s"}'


def test_one_path_used_twice_is_one_variable():
    command, env = parse_template("echo ${v} '{{ v }}' \"${w}\"").render_shell(Scope(variables={"v": 1, "w": 2}))
    assert command == 'echo "$FORGE_V1" \'\'"$FORGE_V1"\'\' "${FORGE_V2}"'
    assert env == {"FORGE_V1": "1", "FORGE_V2": "2"}


def test_a_value_inside_arithmetic_is_refused_when_rendered_for_a_shell():
    with pytest.raises(TemplateError, match="arithmetic"):
        parse_template("echo $((${n} + 1))").render_shell(Scope(variables={"n": 7}))


def test_a_value_holding_a_nul_character_cannot_be_given_to_a_shell():
    with pytest.raises(TemplateError, match="NUL"):
        parse_template("echo ${v}").render_shell(Scope(variables={"v": "a\0b"}))


def test_an_escaped_marker_reaches_the_shell_as_a_shell_variable():
    _, result = run_shell("FORGE_T=from_shell; echo $${FORGE_T}", Scope())
    assert result.stdout == "from_shell\n"
