"""`--json-schema <file>` (seed 002 §4): the answer is one JSON document valid against the schema,
asked through `response_format` (or by instruction), repaired once, else exit 1; a bad schema
is a usage error before any model call. Through `-p`, `--output-format json` and agent_api."""

from __future__ import annotations

import json

import pytest
from fakellm import call, error, say

pytestmark = pytest.mark.core

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["function", "arity"],
    "properties": {"function": {"type": "string"}, "arity": {"type": "integer"}},
    "additionalProperties": False,
}
VALID = {"function": "add", "arity": 2}


@pytest.fixture
def schema_file(tmp_path):
    def write(schema=SCHEMA, name="schema.json"):
        path = tmp_path / name
        path.write_text(schema if isinstance(schema, str) else json.dumps(schema))
        return str(path)

    return write


def test_valid_answer_is_the_whole_stdout(fake_llm, yuyao, env, repo, schema_file):
    server = fake_llm([call("read", file_path=str(repo / "calc.py")), say(json.dumps(VALID))])
    proc = yuyao("-p", "Describe calc.py", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == VALID  # stdout is the document alone
    body = server.body(0)
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert '"arity"' in server.user_text(0)  # the instruction states the schema too


def test_invalid_answer_gets_one_repair_turn(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say('Sure! {"function": "add", "arity": "two"}'), say(json.dumps(VALID))])
    proc = yuyao("-p", "Describe calc.py", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == VALID
    assert len(server.requests) == 2
    repair = server.messages(1)[-1]
    assert repair["role"] == "user"
    assert "/arity" in repair["content"] and "not valid" in repair["content"]


def test_still_invalid_exits_1_with_errors_on_stderr(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say('{"function": 3}'), say("not json at all")])
    proc = yuyao("-p", "Describe calc.py", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 1
    assert proc.stdout.strip() == ""
    assert "JSON schema" in proc.stderr and "not a JSON document" in proc.stderr
    assert len(server.requests) == 2  # exactly one repair turn


@pytest.mark.parametrize(
    "schema",
    ["{not json", '{"type": 12}', '{"$ref": "https://example.com/remote.json"}', "[1, 2]"],
    ids=["not-json", "bad-type", "remote-ref", "array"],
)
def test_bad_schema_exits_2_before_any_model_call(fake_llm, yuyao, env, schema_file, schema):
    server = fake_llm([say("{}")])
    proc = yuyao("-p", "x", "--json-schema", schema_file(schema), env=env(server))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--json-schema" in proc.stderr
    assert server.requests == []


def test_draft_07_schema(fake_llm, yuyao, env, schema_file):
    draft7 = {**SCHEMA, "$schema": "http://json-schema.org/draft-07/schema#"}
    server = fake_llm([say(json.dumps(VALID))])
    proc = yuyao("-p", "x", "--json-schema", schema_file(draft7), env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == VALID


def test_instruction_only_when_configured(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say(json.dumps(VALID))])
    yuyao("config", "set", "model.response_format", "instruction", env=env(server))
    proc = yuyao("-p", "x", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert "response_format" not in server.body(0)
    assert "[answer format]" in server.user_text(0)


def test_auto_falls_back_when_the_endpoint_refuses_response_format(
    fake_llm, yuyao, env, schema_file
):
    def respond(request, index):
        if "response_format" in request:
            return error(400, "response_format is not supported by this model")
        return say(json.dumps(VALID))

    server = fake_llm(respond)
    proc = yuyao("-p", "x", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == VALID
    assert "response_format" not in server.body(-1)


def test_json_output_carries_structured_output(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say(json.dumps(VALID))])
    proc = yuyao(
        "-p", "x", "--json-schema", schema_file(), "--output-format", "json", env=env(server)
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structured_output"] == VALID


def test_agent_api(fake_llm, api, schema_file):
    server = fake_llm([say("```json\n" + json.dumps(VALID) + "\n```")])
    session = api(server, json_schema=schema_file())
    assert json.loads(session.chat("Describe calc.py")) == VALID
    assert server.body(0)["response_format"]["type"] == "json_schema"


def test_a_short_string_document_is_a_clean_answer(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say('"ok"')])
    proc = yuyao("-p", "x", "--json-schema", schema_file({"type": "string"}), env=env(server))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == "ok"


def test_architect_plan_is_not_held_to_the_schema(fake_llm, yuyao, env, schema_file):
    server = fake_llm([say("1. Describe add."), say(json.dumps(VALID))])
    proc = yuyao("-p", "x", "--role", "architect", "--json-schema", schema_file(), env=env(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == VALID
    assert len(server.requests) == 2  # no repair turn for the plan
    assert "response_format" not in server.body(0) and "response_format" in server.body(1)
