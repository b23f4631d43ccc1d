"""Every case file in cases/ validates against cases/case.schema.json, and the schema rejects
what the loader rejects (an unknown field, a bad expectation)."""

import json
import pathlib

import jsonschema
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "cases" / "case.schema.json").read_text())
CASE_FILES = sorted(p for p in (ROOT / "cases").glob("*.json") if not p.name.endswith(".schema.json"))


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_case_file_matches_schema(path):
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_schema_rejects_unknown_fields_and_expectations():
    case = {"name": "c", "op": "quantize", "input": {"dtype": "f32", "shape": [1], "data": [1.0]},
            "scale": 1.0, "output_dtype": "i8"}
    jsonschema.validate({"suite": "s", "cases": [case]}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"suite": "s", "cases": [dict(case, scael=1.0)]}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"suite": "s", "cases": [dict(case, expect={"cpu-ref": "close enough"})]}, SCHEMA)
