"""The editor's JSON Schema of .lobsterX: generated from the model, never stricter than the validator."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from engine.model import Document, Step
from engine.schema import lobsterx_schema
from engine.validation import validate_source
from engine.yamlload import load

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance" / "cases"
DOCUMENTS = sorted([*CONFORMANCE.glob("*.yaml"), *(ROOT / "examples").glob("*.yaml"),
                    *(ROOT / "tests" / "engine" / "cases").glob("*.yaml"),
                    *(ROOT / "tests" / "engine" / "edit" / "corpus").glob("*.yaml")])


def checker() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(lobsterx_schema())


def schema_errors(document: dict) -> list[str]:
    """Each error as "path: message", down to the branches of an anyOf (where a nullable field went wrong)."""
    def leaves(errors):
        for error in errors:
            yield from leaves(error.context) if error.context else [error]
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in leaves(checker().iter_errors(document))]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    schema = lobsterx_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["steps"]["items"] == {"$ref": "#/$defs/Step"}


def test_the_schema_is_the_models_every_field_documented():
    schema = lobsterx_schema()
    step = schema["$defs"]["Step"]["properties"]
    assert set(schema["properties"]) == set(Document.model_fields)
    assert set(step) == {f.alias or name for name, f in Step.model_fields.items()}
    for name, prop in [*schema["properties"].items(), *step.items()]:
        assert prop.get("description"), f"{name} has no description for completion"
    assert step["retry"]["anyOf"][0] == {"$ref": "#/$defs/RetrySpec"}
    assert schema["$defs"]["InputSpec"]["required"] == ["from"]


def test_callers_get_their_own_copy():
    lobsterx_schema()["properties"].clear()
    assert "steps" in lobsterx_schema()["properties"]


def test_there_are_documents_to_check():
    assert len(DOCUMENTS) >= 70, DOCUMENTS


# The validator may refuse more than the schema (cycles, unknown references...): only what it accepts is asked.
ACCEPTED = [path for path in DOCUMENTS if validate_source(path.read_bytes()).valid]


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_schema_accepts_every_document_the_validator_accepts(path):
    assert schema_errors(load(path.read_bytes()).value) == []


def test_most_of_those_documents_are_valid_so_the_check_above_means_something():
    assert len(ACCEPTED) >= 50, len(ACCEPTED)


VALID = """\
name: wf
x-layout: {kept: for tools}
timeout: 2d
steps:
  - id: fetch
    agent: shell
    command: echo hi
    timeout: 90s
    x-note: a tool's key on a step
    retry: {max_retries: 2, x-why: flaky}
    outputs:
      count: {type: integer, minimum: 0}
  - id: review
    approval: required
    depends_on: [fetch]
    inputs:
      n: {from: fetch.outputs.count, type: integer}
"""


def test_a_document_with_x_keys_everywhere_is_accepted_by_both():
    assert validate_source(VALID).valid
    assert schema_errors(load(VALID).value) == []


@pytest.mark.parametrize("change, where", [
    (("name: wf\n", "name: wf\ncolour: blue\n"), ""),                             # unknown document key
    (("    agent: shell\n", "    agnet: shell\n"), "steps/0"),                    # unknown step key
    (("{max_retries: 2,", "{max_retries: two,"), "steps/0/retry/max_retries"),    # wrong type
    (("    timeout: 90s\n", "    timeout: soon\n"), "steps/0/timeout"),          # not a duration
    (("  - id: fetch\n", "  - id: Fetch\n"), "steps/0/id"),                       # not an id
    (("depends_on: [fetch]", "depends_on: fetch"), "steps/1/depends_on"),        # a string, not a list
    (("{type: integer, minimum: 0}", "{type: int}"), "steps/0/outputs/count/type"),  # not a type name
    (("{from: fetch.outputs.count,", "{form: fetch.outputs.count,"), "steps/1/inputs/n"),  # from missing
    (("name: wf\n", ""), ""),                                                     # name missing
])
def test_the_schema_refuses_what_the_validator_refuses(change, where):
    old, new = change
    text = VALID.replace(old, new, 1)
    assert text != VALID
    assert not validate_source(text).valid
    errors = schema_errors(load(text).value)
    assert errors and any(e.split(":")[0] == where for e in errors), errors


def test_the_schema_refuses_a_document_without_steps():
    assert schema_errors({"name": "wf", "steps": []})
    assert schema_errors({"name": "wf"})
    assert not validate_source("name: wf\nsteps: []\n").valid
