"""Hostile input (spec section 3): a validation problem, never a crash, a hang or unbounded memory.

Every case is validated twice: once timed (the bound is 1 second of wall time), once under
tracemalloc to measure the peak memory that validation adds on top of the input it was given.
The corpus in `hostile/` holds the small documents (each says on its first line what it
attacks); the big ones are generated here, in memory.
"""

import itertools
import json
import string
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from engine.validation import validate_source

CORPUS = Path(__file__).parent / "hostile"
ROOT = Path(__file__).resolve().parents[2]
TIME_BOUND_S = 10.0  # a blow-up takes minutes or never ends; a busy machine may take a second
# The largest valid documents are not attacks: their speed is a benchmark figure
# (bench/engine_bench.py); here a looser bound only catches a hang or a quadratic blow-up.
LARGE_VALID_BOUND_S = 5.0
MiB = 1 << 20
BOMB_MEMORY = 32 * MiB
LOAD_CODES = {"yaml_error", "not_a_mapping", "too_large", "too_deep", "alias_limit"}

EXPECTED = {
    "alias_of_a_deep_node_placed_deep.yaml": "too_deep",
    "alias_to_unknown_anchor.yaml": "yaml_error",
    "bidi_document_name.yaml": "bad_type",
    "bidi_step_id.yaml": "bad_step_id",
    "bidi_step_name.yaml": "bad_type",
    "billion_laughs_in_mock_outputs.yaml": "alias_limit",
    "billion_laughs_mappings.yaml": "alias_limit",
    "billion_laughs_scalar_anchors.yaml": "alias_limit",
    "billion_laughs_sequences.yaml": "alias_limit",
    "comments_only.yaml": "not_a_mapping",
    "deep_block_mappings_300.yaml": "too_deep",
    "deep_block_sequences_10000.yaml": "too_deep",
    "deep_flow_mappings_10000.yaml": "too_deep",
    "deep_flow_sequences_10000.yaml": "too_deep",
    "deep_unclosed_flow_sequences.yaml": "too_deep",
    "document_end_then_another.yaml": "yaml_error",
    "document_marker_only.yaml": "not_a_mapping",
    "duplicate_document_name.yaml": "yaml_error",
    "duplicate_key_deep.yaml": "yaml_error",
    "duplicate_key_in_flow.yaml": "yaml_error",
    "duplicate_step_command.yaml": "yaml_error",
    "empty_second_document.yaml": "yaml_error",
    "escaped_control_in_step_name.yaml": "bad_type",
    "expression_nesting.yaml": "expression_error",
    "expression_too_long.yaml": "expression_error",
    "huge_hex_backoff.yaml": "bad_type",
    "huge_hex_name.yaml": "bad_type",
    "huge_integer_timeout.yaml": "bad_type",
    "invalid_utf8.yaml": "yaml_error",
    "latin1_text.yaml": "yaml_error",
    "long_plain_key.yaml": "yaml_error",
    "many_unknown_dependencies.yaml": "unknown_dependency",
    "mapping_as_key.yaml": "yaml_error",
    "merge_key.yaml": "unknown_key",
    "nul_escape_in_command.yaml": "bad_type",
    "nul_escape_in_depends_on.yaml": "bad_type",
    "nul_escape_in_key.yaml": "bad_type",
    "overlong_utf8_nul.yaml": "yaml_error",
    "raw_control_characters.yaml": "yaml_error",
    "raw_nul_bytes.yaml": "yaml_error",
    "recursive_alias.yaml": "yaml_error",
    "root_anchored_scalar.yaml": "not_a_mapping",
    "root_block_scalar.yaml": "not_a_mapping",
    "root_flow_list.yaml": "not_a_mapping",
    "root_list.yaml": "not_a_mapping",
    "root_null.yaml": "not_a_mapping",
    "root_number.yaml": "not_a_mapping",
    "root_plain_scalar.yaml": "not_a_mapping",
    "root_quoted_scalar.yaml": "not_a_mapping",
    "self_cycle_chain.yaml": "cycle",
    "tab_indentation.yaml": "yaml_error",
    "template_unclosed_flood.yaml": "expression_error",
    "two_documents.yaml": "yaml_error",
    "unclosed_flow_mapping.yaml": "yaml_error",
    "utf8_encoded_surrogate.yaml": "yaml_error",
    **{f"tag_{kind}.yaml": "yaml_error" for kind in (
        "binary", "directive_shorthand", "local", "non_specific", "on_key", "on_mapping", "on_root", "on_sequence",
        "python_module", "python_name", "python_object_apply", "set", "str", "timestamp", "verbatim")},
}


def validate_within_bounds(data, expected, memory_bound, time_bound=TIME_BOUND_S):
    """Validate `data`: it returns (never raises) within the time bound, and within `memory_bound` bytes added."""
    started = time.perf_counter()
    report = validate_source(data)
    elapsed = time.perf_counter() - started
    codes = [p.code for p in report.problems]
    if expected is None:
        assert report.problems == [], report.problems[:5]
        assert report.workflow is not None
    else:
        assert expected in codes, report.problems[:5]
        assert report.workflow is None
    assert elapsed < time_bound, f"validation took {elapsed:.2f} s"
    if memory_bound is not None:
        tracemalloc.start()
        try:
            validate_source(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < memory_bound, f"validation added {peak / MiB:.1f} MiB at its peak"
    return report


def corpus_memory_bound(code, size):
    # Plain rejections by the loader stay within ~3x the input; bombs, deep nesting and documents that
    # reach the validator (pydantic objects for every step) are held to the fixed 32 MiB bound.
    return 3 * size + 64 * 1024 if code in ("yaml_error", "not_a_mapping") else BOMB_MEMORY


# -- the corpus -------------------------------------------------------------------------------------------

def test_every_corpus_file_has_an_expected_code_and_says_what_it_attacks():
    files = sorted(path.name for path in CORPUS.glob("*.yaml"))
    assert files == sorted(EXPECTED)
    for name in files:
        data = (CORPUS / name).read_bytes()
        assert data.startswith(b"# ") and len(data) < 100_000, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_hostile_corpus_document_gets_its_problem_in_time_and_in_bounded_memory(name):
    data = (CORPUS / name).read_bytes()
    report = validate_within_bounds(data, EXPECTED[name], corpus_memory_bound(EXPECTED[name], len(data)))
    if EXPECTED[name] == "yaml_error":
        # FORMAT.md section 2: a yaml_error is positioned where the parser stopped.
        problem = report.problems[0]
        assert problem.line is not None and problem.column is not None, problem


def test_a_merge_key_is_an_ordinary_unknown_key_and_merges_nothing():
    report = validate_source((CORPUS / "merge_key.yaml").read_bytes())
    unknown = [p for p in report.problems if p.code == "unknown_key"]
    assert [(p.step, p.line, p.column) for p in unknown] == [("a", 6, 5)]
    assert "<<" in unknown[0].message
    assert {"missing_agent", "missing_command"} <= {p.code for p in report.problems}


def test_a_step_id_with_a_right_to_left_override_is_reported_as_written():
    [problem] = validate_source((CORPUS / "bidi_step_id.yaml").read_bytes()).problems
    assert (problem.code, problem.step, problem.line) == ("bad_step_id", "safe\u202ecmd", 4)


def test_a_billion_laughs_document_is_stopped_at_the_alias_that_crosses_the_limit():
    # Levels a, b and c expand to 1,220 nodes; the eighth alias on the x-d line (line 10) passes 10,000.
    [problem] = validate_source((CORPUS / "billion_laughs_sequences.yaml").read_bytes()).problems
    assert (problem.code, problem.line) == ("alias_limit", 10)
    assert "10,000" in problem.message


def test_a_yaml_python_tag_never_runs_and_is_a_yaml_error_at_the_tag():
    [problem] = validate_source((CORPUS / "tag_python_object_apply.yaml").read_bytes()).problems
    assert (problem.code, problem.line, problem.column) == ("yaml_error", 6, 14)


# -- generated cases --------------------------------------------------------------------------------------

def names(count):
    """`count` distinct snake_case names: a, b, ..., z, aa, ab, ..."""
    produced = itertools.chain.from_iterable(
        itertools.product(string.ascii_lowercase, repeat=n) for n in itertools.count(1))
    return ["".join(letters) for letters in itertools.islice(produced, count)]


WF = "name: wf\nsteps:\n  - id: a\n    agent: mock\n    command: go\n"


def padded_to(text: str, size: int) -> bytes:
    """`text` plus a trailing comment so the whole is exactly `size` bytes."""
    data = text.encode()
    return data + b"#" * (size - len(data) - 1) + b"\n"


def ordinary_workflow_of(size: int) -> bytes:
    """A realistic workflow (a chain of ordinary steps) filling `size` bytes."""
    parts, used = ["name: big_review\nphases: [review]\nsteps:\n"], 40
    for i in itertools.count():
        dep = f"\n    depends_on: [s{i - 1}]" if i else ""
        step = (f"  - id: s{i}\n    name: Review part {i}\n    phase: review\n    agent: mock\n"
                f"    command: 'summarise vendor answer {i} in two sentences'{dep}\n"
                f"    outputs:\n      summary: {{type: string}}\n")
        if used + len(step) > size - 200:
            break
        parts.append(step)
        used += len(step)
    return padded_to("".join(parts), size)


def compact_steps(count: int) -> bytes:
    return ("name: wf\nsteps:\n" + "".join(f"- {{id: {i},agent: m,command: g}}\n" for i in names(count))).encode()


GENERATED = {
    "flow_lists_100000_deep": (lambda: b"x: " + b"[" * 100_000 + b"]" * 100_000, "too_deep", BOMB_MEMORY),
    "flow_mappings_100000_deep": (lambda: b"x: " + b"{a: " * 100_000 + b"1" + b"}" * 100_000, "too_deep", BOMB_MEMORY),
    "block_lists_100000_deep": (lambda: b"x:\n  " + b"- " * 100_000 + b"end\n", "too_deep", BOMB_MEMORY),
    # Block mappings need one more space of indentation per level: 10,000 levels are ~50 MB of spaces.
    "block_mappings_10000_deep": (lambda: b"".join(b"k:\n" + b" " * (i + 1) for i in range(10_000)) + b"k: end\n",
                                  "too_large", BOMB_MEMORY),
    "billion_laughs_twenty_levels": (lambda: ("l0: &l0 [lol, lol]\n" + "".join(
        f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}, *l{i - 1}]\n" for i in range(1, 20))).encode(), "alias_limit", BOMB_MEMORY),
    "one_byte_over_a_mebibyte": (lambda: padded_to(WF, MiB + 1), "too_large", 3 * (MiB + 1)),
    "fifty_mebibytes_of_bytes": (lambda: b"x: " + b"a" * (50 * MiB), "too_large", MiB),
    "fifty_mebibytes_of_text": (lambda: "x: " + "a" * (50 * MiB), "too_large", 3 * 50 * MiB),
    "text_heavy_workflow_of_exactly_a_mebibyte": (
        lambda: padded_to(WF + "description: |\n" + "  lorem ipsum dolor sit amet\n" * 35_000, MiB), None, None),
    "ordinary_workflow_of_exactly_a_mebibyte": (lambda: ordinary_workflow_of(MiB), None, None),
    "plain_command_of_a_million_characters": (lambda: (WF[:-3] + "x" * 1_000_000 + "\n").encode(), None, None),
    "quoted_command_of_a_million_escapes": (lambda: (WF[:-3] + '"' + "\\u00e9" * 150_000 + '"\n').encode(), None, None),
    "hundred_thousand_variables": (
        lambda: (WF + "variables:\n" + "".join(f"  {k}: 1\n" for k in names(100_000))).encode(), None, None),
    "hundred_thousand_unknown_keys": (
        lambda: (WF + "".join(f"{k}: 1\n" for k in names(100_000)[1:])).encode(), "unknown_key", None),
    "integer_of_100000_digits_as_timeout": (lambda: (WF + "    timeout: 9" + "1" * 99_999 + "\n").encode(), "bad_type",
                                            BOMB_MEMORY),
    "integer_of_100000_digits_as_max_retries": (
        lambda: (WF + "    retry: {max_retries: " + "7" * 100_000 + "}\n").encode(), "bad_type", BOMB_MEMORY),
    "integer_of_100000_digits_as_step_id": (lambda: WF.replace("id: a", "id: " + "1" * 100_000).encode(),
                                            "bad_step_id", BOMB_MEMORY),
    "utf16_le_with_bom": (lambda: "\ufeff".encode("utf-16-le") + WF.encode("utf-16-le"), "yaml_error", None),
    "utf16_be_with_bom": (lambda: "\ufeff".encode("utf-16-be") + WF.encode("utf-16-be"), "yaml_error", None),
    "utf16_le_without_bom": (lambda: WF.encode("utf-16-le"), "yaml_error", None),
    "utf32_with_bom": (lambda: WF.encode("utf-32"), "yaml_error", None),
    "empty_file": (lambda: b"", "not_a_mapping", None),
    "nul_bytes_only": (lambda: b"\x00" * 100_000, "yaml_error", BOMB_MEMORY),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_a_generated_hostile_document_gets_its_problem_in_time_and_in_bounded_memory(case):
    make, expected, memory_bound = GENERATED[case]
    bound = LARGE_VALID_BOUND_S if expected is None else TIME_BOUND_S
    validate_within_bounds(make(), expected, memory_bound, bound)


def test_the_most_steps_that_fit_in_a_mebibyte_validate():
    # `- {id: abcd,agent: m,command: g}` is 33 bytes with its newline: about 31,000 steps, the most a
    # document can hold.
    count = (MiB - 20) // 33
    data = compact_steps(count)
    assert len(data) <= MiB
    report = validate_within_bounds(data, None, None, LARGE_VALID_BOUND_S)
    assert len(report.workflow.steps) == count
    assert report.workflow.layers() == [sorted(names(count))]


def test_every_unknown_key_of_a_thousand_key_document_is_reported_at_its_line():
    report = validate_source((WF + "".join(f"{k}: 1\n" for k in names(1_000)[1:])).encode())
    unknown = [p for p in report.problems if p.code == "unknown_key"]
    assert [p.line for p in unknown] == list(range(6, 6 + 999))


# -- the command line, as an author would run it ------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "billion_laughs_sequences.yaml", "deep_flow_sequences_10000.yaml", "tag_python_object_apply.yaml",
    "two_documents.yaml", "invalid_utf8.yaml", "raw_nul_bytes.yaml", "root_list.yaml", "huge_integer_timeout.yaml",
])
def test_validate_on_the_command_line_exits_1_with_one_json_object(name):
    done = subprocess.run([sys.executable, "-m", "engine", "validate", str(CORPUS / name), "--json"],
                          cwd=ROOT, timeout=10, capture_output=True)
    assert done.returncode == 1, done.stderr.decode(errors="replace")[-2000:]
    result = json.loads(done.stdout)
    assert done.stdout.decode().strip().count("\n") == 0
    assert result["valid"] is False
    assert EXPECTED[name] in [p["code"] for p in result["problems"]]


def test_a_document_with_too_many_problems_lists_the_first_thousand_and_counts_the_rest():
    report = validate_source((WF + "".join(f"{k}: 1\n" for k in names(5_000)[1:])).encode())
    assert len(report.problems) == 1001
    assert [p.line for p in report.problems[:3]] == [6, 7, 8]
    summary = report.problems[-1]
    assert (summary.code, summary.line) == ("unknown_key", None)
    assert "3,999 more problems" in summary.message


CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
CONFORMANCE_HOSTILE = {"validate_alias_bomb": "alias_limit", "validate_too_deep": "too_deep",
                       "validate_duplicate_keys": "yaml_error", "validate_non_mapping_root": "not_a_mapping"}


@pytest.mark.parametrize("case", sorted(CONFORMANCE_HOSTILE))
def test_every_hostile_conformance_case_gets_its_problem_in_time_and_in_bounded_memory(case):
    data = (CONFORMANCE / f"{case}.yaml").read_bytes()
    validate_within_bounds(data, CONFORMANCE_HOSTILE[case], BOMB_MEMORY)
