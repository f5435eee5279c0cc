"""Tools with schemas: given or derived from Python types, validated; the provider name map.

No database, no network: ``Tool(description=..., parameters=...)``, the same keywords on
``@tools.read``/``@tools.write``, ``@tools.function`` (a typed function's signature),
dataclasses, TypedDicts and pydantic models; ``Tool.validate`` on the arguments a model
sends; ``ToolNames`` keeping the library's names apart from the provider's.
"""

from __future__ import annotations

import dataclasses
import enum
import random
import re
from typing import Annotated, Any, Literal, TypedDict

import pytest

from ticketiq_pg import CallContext, Tool, ToolNames, Tools
from ticketiq_pg.adapters.schema import schema_from, validate


async def noop(call: CallContext) -> dict[str, Any]:
    return {}


COMMENT = {
    "type": "object",
    "properties": {
        "ticket_id": {"type": "string", "pattern": "^T-[0-9]+$"},
        "team": {"type": "string", "enum": ["support", "billing", "security"]},
        "text": {"type": "string", "minLength": 1, "maxLength": 200},
        "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "links": {"type": "array", "items": {
            "type": "object", "properties": {"url": {"type": "string"},
                                             "weight": {"type": "integer", "minimum": 0}},
            "required": ["url"], "additionalProperties": False}},
        "urgent": {"type": "boolean"},
    },
    "required": ["ticket_id", "team", "text"],
    "additionalProperties": False,
}
GOOD = {"ticket_id": "T-1", "team": "billing", "text": "refund", "labels": ["a"],
        "links": [{"url": "https://x", "weight": 2}], "urgent": False}


@pytest.mark.parametrize(("change", "error"), [
    ({}, None),
    ({"ticket_id": 7}, "arguments.ticket_id: expected string, got integer"),
    ({"ticket_id": "X-1"}, "arguments.ticket_id: \"X-1\" does not match"),
    ({"team": "sales"}, "arguments.team: \"sales\" is not one of"),
    ({"text": ""}, "arguments.text: needs at least 1 characters"),
    ({"extra": 1}, "arguments.extra: not an allowed property"),
    ({"labels": ["a", 2]}, "arguments.labels[1]: expected string, got integer"),
    ({"labels": ["a", "b", "c", "d"]}, "arguments.labels: takes at most 3 items"),
    ({"links": [{"url": "u", "weight": -1}]}, "arguments.links[0].weight: must be at least 0"),
    ({"links": [{"weight": 1}]}, "arguments.links[0].url: required"),
    ({"links": [{"url": "u", "rel": "x"}]}, "arguments.links[0].rel: not an allowed property"),
    ({"urgent": 1}, "arguments.urgent: expected boolean, got integer"),
])
def test_validate_checks_types_required_enum_extra_and_nesting(change: dict, error: str | None
                                                                ) -> None:
    tool = Tool("tickets.comment", "write", invoke=noop, parameters=COMMENT)
    found = tool.validate({**GOOD, **change})
    if error is None:
        assert found is None
    else:
        assert found is not None and found.startswith(error), found


def test_validate_required_and_non_objects() -> None:
    tool = Tool("tickets.comment", "write", invoke=noop, parameters=COMMENT)
    assert tool.validate({"ticket_id": "T-1", "team": "support"}) == "arguments.text: required"
    assert tool.validate(["T-1"]) == "arguments: expected object"
    # no schema: any object
    assert Tool("free", "read", invoke=noop).validate({"anything": [1]}) is None
    # a bool is not an integer, an integral float is, a number takes both
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    assert validate(schema, {"n": True}) == "arguments.n: expected integer, got boolean"
    assert validate(schema, {"n": 2.0, "x": 1}) is None
    assert validate(schema, {"x": "1"}) == "arguments.x: expected number, got string"


def test_combinators_refs_and_nullable() -> None:
    schema = {
        "type": "object",
        "$defs": {"Link": {"type": "object", "properties": {"url": {"type": "string"}},
                           "required": ["url"]}},
        "properties": {
            "link": {"$ref": "#/$defs/Link"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
            "size": {"type": ["integer", "null"]},
        },
    }
    assert validate(schema, {"link": {"url": "u"}, "note": None, "kind": "a", "size": None}) is None
    assert validate(schema, {"link": {}}) == "arguments.link.url: required"
    assert validate(schema, {"note": 3}) == (
        "arguments.note: 3 is not valid under any of the given schemas")
    assert validate(schema, {"kind": "c"}) == (
        "arguments.kind: 'c' is not valid under any of the given schemas")
    assert validate(schema, {"size": "big"}) == (
        "arguments.size: expected integer or null, got string")


# Schemas the project's own validator judged against the JSON Schema specification (it
# ignored the keywords it did not know, compared numbers as text, followed no anchor, and
# took a $ref it could not follow as a pass); jsonschema judges them as Draft 2020-12 says.
CONDITIONAL = {"type": "object", "properties": {"kind": {"enum": ["refund", "note"]}},
               "if": {"properties": {"kind": {"const": "refund"}}},
               "then": {"required": ["amount"]}}


@pytest.mark.parametrize(("schema", "value", "error"), [
    # if/then: a refund needs an amount
    (CONDITIONAL, {"kind": "refund"}, "arguments.amount: required"),
    (CONDITIONAL, {"kind": "note"}, None),
    # patternProperties constrain the values of the names they match
    ({"type": "object", "patternProperties": {"^n_": {"type": "integer"}}}, {"n_a": "x"},
     "arguments.n_a: expected integer, got string"),
    # 1 and 1.0 are the same JSON number: not unique
    ({"type": "object", "properties": {"ids": {"type": "array", "uniqueItems": True}}},
     {"ids": [1, 1.0]}, "arguments.ids: items must be unique"),
    # formats are asserted
    ({"type": "object", "properties": {"to": {"type": "string", "format": "email"}}},
     {"to": "not an address"}, 'arguments.to: "not an address" is not a valid email'),
    # dependentRequired, contains, propertyNames, unevaluatedProperties
    ({"type": "object", "dependentRequired": {"amount": ["currency"]}}, {"amount": 5},
     "arguments: 'currency' is a dependency of 'amount'"),
    ({"type": "object", "properties": {"tags": {"contains": {"const": "triage"}}}},
     {"tags": ["x"]}, "arguments.tags: ['x'] does not contain items matching the given schema"),
    ({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}, {"Bad": 1},
     'arguments: "Bad" does not match \'^[a-z]+$\''),
    ({"type": "object", "allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
     {"a": 1, "b": 2}, "arguments: Unevaluated properties are not allowed ('b' was unexpected)"),
    # a $ref to an $anchor is followed
    ({"type": "object", "properties": {"n": {"$ref": "#count"}},
      "$defs": {"c": {"$anchor": "count", "type": "integer"}}}, {"n": "1"},
     "arguments.n: expected integer, got string"),
])
def test_the_specification_judges_what_the_old_validator_let_through(
        schema: dict, value: dict, error: str | None) -> None:
    assert validate(schema_from(schema), value) == error


def test_a_schema_that_is_not_draft_2020_12_or_refers_outside_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="not a JSON Schema .Draft 2020-12. at /properties/n"):
        Tool("t", "read", invoke=noop,
             parameters={"type": "object", "properties": {"n": {"type": "integr"}}})
    for ref in ("https://example.com/ticket.json", "other.json#/x", "#/$defs/missing"):
        with pytest.raises(ValueError, match="does not resolve within the schema"):
            Tool("t", "read", invoke=noop,
                 parameters={"type": "object", "properties": {"n": {"$ref": ref}}})
    # a reference to an $id inside the schema resolves, and nothing is fetched
    own = {"$id": "https://example.com/root", "type": "object",
           "properties": {"n": {"$ref": "count.json"}},
           "$defs": {"c": {"$id": "count.json", "type": "integer"}}}
    assert validate(schema_from(own), {"n": 1}) is None
    assert validate(schema_from(own), {"n": "1"}) == "arguments.n: expected integer, got string"


class Team(enum.Enum):
    SUPPORT = "support"
    BILLING = "billing"


@dataclasses.dataclass
class Link:
    url: str
    weight: int = 1


def test_schema_from_a_typed_function() -> None:
    def comment(call: CallContext, ticket_id: Annotated[str, "the ticket's id, e.g. T-1"],
                team: Team, text: str, labels: list[str] | None = None,
                mode: Literal["public", "internal"] = "internal",
                links: tuple[Link, ...] = (), score: float = 0.5) -> None: ...

    schema = schema_from(comment)
    assert schema == {
        "type": "object",
        "properties": {
            "ticket_id": {"type": "string", "description": "the ticket's id, e.g. T-1"},
            "team": {"enum": ["support", "billing"]},
            "text": {"type": "string"},
            "labels": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                 {"type": "null"}], "default": None},
            "mode": {"enum": ["public", "internal"], "type": "string", "default": "internal"},
            "links": {"type": "array", "items": {
                "type": "object", "properties": {"url": {"type": "string"},
                                                 "weight": {"type": "integer", "default": 1}},
                "required": ["url"], "additionalProperties": False}, "default": []},
            "score": {"type": "number", "default": 0.5},
        },
        "required": ["ticket_id", "team", "text"],
        "additionalProperties": False,
    }
    assert validate(schema, {"ticket_id": "T-1", "team": "billing", "text": "x",
                             "links": [{"url": "u"}]}) is None
    assert validate(schema, {"ticket_id": "T-1", "team": "sales", "text": "x"}) is not None


class Args(TypedDict, total=False):
    ticket_id: str
    limit: int


def test_schema_from_a_typed_dict_and_a_dict_schema_is_kept() -> None:
    assert schema_from(Args) == {"type": "object",
                                 "properties": {"ticket_id": {"type": "string"},
                                                "limit": {"type": "integer"}},
                                 "additionalProperties": False}
    assert schema_from(COMMENT) == COMMENT and schema_from(COMMENT) is not COMMENT
    with pytest.raises(TypeError, match="object schema"):
        schema_from({"type": "string"})
    with pytest.raises(ValueError, match="tool t: bad parameters"):
        Tool("t", "read", invoke=noop, parameters=42)


try:
    import pydantic
except ImportError:  # optional: fastapi brings it
    pydantic = None
else:

    class Target(pydantic.BaseModel):
        url: str

    class Comment(pydantic.BaseModel):
        ticket_id: str = pydantic.Field(description="the ticket's id")
        team: Literal["support", "billing"]
        targets: list[Target] = []

    def post(call: CallContext, comment: Comment) -> None: ...


@pytest.mark.skipif(pydantic is None, reason="pydantic is not installed")
def test_schema_from_a_pydantic_model() -> None:
    tool = Tool("tickets.comment", "write", invoke=noop, parameters=Comment)
    assert tool.parameters["properties"]["ticket_id"]["description"] == "the ticket's id"
    assert tool.validate({"ticket_id": "T-1", "team": "support",
                          "targets": [{"url": "u"}]}) is None
    assert tool.validate({"ticket_id": "T-1", "team": "support", "targets": [{}]}) == (
        "arguments.targets[0].url: required")

    # a pydantic model as one parameter of a function: its definitions hoisted to the root
    derived = schema_from(post)
    assert "Target" in derived["$defs"]
    assert validate(derived, {"comment": {"ticket_id": "T", "team": "billing",
                                          "targets": [{"url": 1}]}}) == (
        "arguments.comment.targets[0].url: expected string, got integer")


async def test_decorators_take_descriptions_and_schemas() -> None:
    tools = Tools()

    @tools.read("tickets.get", description="Read a ticket.", parameters=COMMENT)
    async def get(call: CallContext) -> dict[str, Any]:
        return {}

    @tools.function("jira.get_issue", takes_key=False)
    async def get_issue(call: CallContext, key: str, fields: list[str] | None = None) -> dict:
        """Read a Jira issue.

        By its key."""
        return {"key": key, "fields": fields, "step": call.step}

    @tools.function("jira.comment", "write", description="Comment on an issue.")
    async def comment(call: CallContext, key: str, text: str) -> dict:
        return {"key": key}

    assert tools.get("tickets.get").description == "Read a ticket."
    assert tools.get("tickets.get").parameters == COMMENT
    issue = tools.get("jira.get_issue")
    assert issue.classification == "read"
    assert issue.description == "Read a Jira issue.\n\nBy its key."
    assert issue.parameters["required"] == ["key"]
    assert tools.get("jira.comment").classification == "write"
    assert tools.get("jira.comment").description == "Comment on an issue."
    # a function tool is called with the model's arguments as keywords
    ctx = CallContext(run=None, step=3, call_id="call_x", tool="jira.get_issue",  # type: ignore
                      arguments={"key": "OPS-7"}, classification="read", step_key=None)
    assert await issue.invoke(ctx) == {"key": "OPS-7", "fields": None, "step": 3}
    assert hash(issue)  # a tool with a schema is still hashable


PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_the_name_map() -> None:
    names = ToolNames(["jira.get_issue", "tickets.get", "tickets_get", "ok-name", "a b/c",
                       "x" * 70, "x" * 70 + ".y", ""])
    assert names.provider("jira.get_issue") == "jira_get_issue"
    assert names.provider("ok-name") == "ok-name"
    assert names.provider("tickets_get") == "tickets_get"  # valid already: kept
    assert names.provider("tickets.get").startswith("tickets_get_")  # collides: hashed
    provided = [p for _, p in names.items()]
    assert len(set(provided)) == len(provided) == 8
    assert all(PROVIDER_NAME.match(p) for p in provided)
    for library, provider in names.items():
        assert names.library(provider) == library
    assert names.library("hallucinated_tool") == "hallucinated_tool"
    assert names.provider("not.registered") == "not_registered"


def test_the_name_map_does_not_depend_on_the_order() -> None:
    tool_names = ["a.b", "a_b", "a-b", "jira.get", "jira_get", "jira:get"]
    first = ToolNames(tool_names).items()
    for seed in range(5):
        shuffled = tool_names[:]
        random.Random(seed).shuffle(shuffled)
        assert ToolNames(shuffled).items() == first
