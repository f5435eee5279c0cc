"""JSON Schemas for a tool's arguments: derived from Python types, and checked by jsonschema.

A tool's ``parameters`` may be given as a JSON Schema (a dict), or derived here
(:func:`schema_from`) from a typed function's signature, a dataclass, a ``TypedDict`` or,
where pydantic is installed, a pydantic model.  Every schema is checked once against
JSON Schema Draft 2020-12's metaschema, and a ``$ref`` that leaves the schema is refused
(nothing is fetched).  :func:`validate` judges the arguments a model sent with
``jsonschema`` (Draft 2020-12, formats asserted) and turns the library's best-match error
into one line the model can act on (``arguments.ticket_id: required``): that line is all
this module adds.

This module imports nothing of ticketiq_pg: ``ticketiq_pg.agent`` uses it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

__all__ = ["schema_from", "type_schema", "validate", "object_schema", "check_schema"]

#: A schema that accepts any JSON object: what a tool without parameters is sent as.
ANY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                            type(None): "null"}
_CONTEXT_NAMES = {"call", "ctx", "context"}


def object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """``schema`` as a provider takes a tool's parameters: an object schema (default: any)."""
    if not schema:
        return dict(ANY_OBJECT)
    out = dict(schema)
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out


def schema_from(source: Any) -> dict[str, Any] | None:
    """The JSON Schema of a tool's arguments, from whatever describes them.

    ``None`` stays None (no schema: any object is accepted); a dict is taken as the
    schema itself; a pydantic model class gives its ``model_json_schema()``; a dataclass
    or ``TypedDict`` class its fields; a function its parameters (a first parameter
    named ``call``/``ctx``/``context`` or annotated ``CallContext`` is left out).
    ``Annotated[T, "text"]`` gives a property its description.  Raises TypeError for
    anything else, a schema that is not an object schema, not a Draft 2020-12 schema or
    that refers outside itself (:func:`check_schema`).
    """
    if source is None:
        return None
    if isinstance(source, Mapping):
        schema = json.loads(json.dumps(dict(source)))  # a plain JSON copy, or TypeError
        return check_schema(_check_object(schema))
    if isinstance(source, type) and callable(getattr(source, "model_json_schema", None)):
        return check_schema(_check_object(source.model_json_schema()))
    defs: dict[str, Any] = {}
    if isinstance(source, type) and (dataclasses.is_dataclass(source) or _is_typeddict(source)):
        schema = _class_schema(source, defs)
    elif callable(source):
        schema = _function_schema(source, defs)
    else:
        raise TypeError(f"cannot derive a JSON Schema from {source!r}")
    if defs:
        schema["$defs"] = defs
    return check_schema(schema)


def _check_object(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("type", "object") != "object":
        raise TypeError("a tool's parameters must be an object schema ({'type': 'object'})")
    return schema


def _is_typeddict(cls: type) -> bool:
    return isinstance(getattr(cls, "__required_keys__", None), frozenset)


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except (NameError, TypeError) as exc:
        raise TypeError(f"cannot read the type hints of {obj!r}: {exc}") from exc


def _function_schema(fn: Callable[..., Any], defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    if params and (params[0].name in _CONTEXT_NAMES
                   or getattr(hints.get(params[0].name), "__name__", "") == "CallContext"):
        params = params[1:]
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra = False
    for param in params:
        if param.kind is param.VAR_KEYWORD:
            extra = True
            continue
        if param.kind is param.VAR_POSITIONAL:
            continue
        prop = type_schema(hints.get(param.name, Any), defs)
        if param.default is param.empty:
            required.append(param.name)
        else:
            _set_default(prop, param.default)
        properties[param.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = extra
    return schema


def _class_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            prop = type_schema(hints.get(f.name, Any), defs)
            if f.default is not dataclasses.MISSING:
                _set_default(prop, f.default)
            elif f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            properties[f.name] = prop
    else:
        for name, hint in hints.items():
            properties[name] = type_schema(hint, defs)
            if name in cls.__required_keys__:  # type: ignore[attr-defined]
                required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
        schema["description"] = inspect.cleandoc(cls.__doc__)
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _set_default(prop: dict[str, Any], default: Any) -> None:
    if isinstance(default, enum.Enum):
        default = default.value
    try:
        prop["default"] = json.loads(json.dumps(default, allow_nan=False))
    except (TypeError, ValueError):
        return


def type_schema(hint: Any, defs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema of one Python type: scalars, lists, dicts, Literal, Optional/Union,
    enums, Annotated, nested dataclasses/TypedDicts/pydantic models (their schema in
    ``defs``, where nested pydantic definitions are hoisted)."""
    defs = {} if defs is None else defs
    if hint is Any or hint is object:
        return {}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        schema = type_schema(args[0], defs)
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is typing.Literal:
        schema: dict[str, Any] = {"enum": list(args)}
        kinds = {_SCALARS.get(type(a)) for a in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin is typing.Union or origin is types.UnionType:
        options = [type_schema(a, defs) for a in args]
        simple = [o.get("type") for o in options if set(o) == {"type"}]
        if len(simple) == len(options) and all(isinstance(t, str) for t in simple):
            return {"type": simple}
        return {"anyOf": options}
    if hint in (list, set, frozenset, tuple) or origin in (list, set, frozenset, tuple):
        schema = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            schema["prefixItems"] = [type_schema(a, defs) for a in args]
            schema["minItems"] = schema["maxItems"] = len(args)
        elif args:
            schema["items"] = type_schema(args[0], defs)
        if origin in (set, frozenset) or hint in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if hint is dict or origin in (dict, Mapping, typing.Mapping):
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1], defs)
        return schema
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        return {"enum": values}
    if isinstance(hint, type) and callable(getattr(hint, "model_json_schema", None)):
        schema = dict(hint.model_json_schema(ref_template="#/$defs/{model}"))
        defs.update(schema.pop("$defs", {}))
        return schema
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or _is_typeddict(hint)):
        return _class_schema(hint, defs)
    raise TypeError(f"no JSON Schema for the type {hint!r}")


# -- checking a schema -----------------------------------------------------------------


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # nothing is fetched: a schema is checked as it stands


_NO_REMOTE: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
# Keywords whose values are data, not schemas: a "$ref" key in them is no reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def check_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, once it is a Draft 2020-12 schema whose every ``$ref`` resolves within
    itself; TypeError otherwise (a remote reference is refused, not fetched)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "".join(f"/{p}" for p in exc.absolute_path) or "/"
        raise TypeError(f"not a JSON Schema (Draft 2020-12) at {where}: {exc.message}") from None
    root = DRAFT202012.create_resource(schema)
    resolver = _NO_REMOTE.with_resource(schema.get("$id", ""), root).resolver(
        schema.get("$id", ""))
    for ref, at in _refs(schema, resolver):
        try:
            at.lookup(ref)
        except Unresolvable:
            raise TypeError(f"$ref {ref!r} does not resolve within the schema (remote "
                            "references are refused)") from None
    return schema


def _refs(node: Any, resolver: Any) -> Iterator[tuple[str, Any]]:
    """Every ``$ref`` in ``node`` with the resolver of the resource it sits in."""
    if isinstance(node, list):
        for item in node:
            yield from _refs(item, resolver)
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    if isinstance(node.get("$ref"), str):
        yield node["$ref"], resolver
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            yield from _refs(value, resolver)


# -- validating arguments --------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _validator(text: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(text), registry=_NO_REMOTE,
                                format_checker=Draft202012Validator.FORMAT_CHECKER)


def validate(schema: Mapping[str, Any] | None, value: Any, path: str = "arguments") -> str | None:
    """What is wrong with ``value`` under ``schema``, in one line, or None when it conforms.

    The judge is jsonschema (Draft 2020-12); the line is its best-match error, said at the
    JSON path of the value it is about (``arguments.links[0].url: required``)."""
    if schema is None:
        return None
    try:
        error = best_match(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value))
    except Unresolvable as exc:  # a schema check_schema never saw
        return f"{path}: cannot be checked: {exc}"
    if error is None:
        return None
    where = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                           for p in error.absolute_path)
    return _line(error, where)


def _json_type(value: Any) -> str:
    for name, test in (("null", lambda v: v is None), ("boolean", lambda v: isinstance(v, bool)),
                       ("integer", lambda v: isinstance(v, int)),
                       ("number", lambda v: isinstance(v, float)),
                       ("string", lambda v: isinstance(v, str)),
                       ("array", lambda v: isinstance(v, list)),
                       ("object", lambda v: isinstance(v, dict))):
        if test(value):
            return name
    return type(value).__name__


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _line(error: ValidationError, where: str) -> str:
    """The best-match error in words a model acts on; the library's own message for the
    keywords said no better here."""
    kind, want, got = error.validator, error.validator_value, error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "required":
        missing = next((n for n in want if n not in got), None)
        return f"{where}.{missing}: required"
    if kind == "additionalProperties" and want is False:
        named = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = next((n for n in got if n not in named
                      and not any(re.search(p, n) for p in patterns)), "?")
        return f"{where}.{extra}: not an allowed property (allowed: {', '.join(named) or 'none'})"
    said = {
        "type": lambda: (f"expected {' or '.join([want] if isinstance(want, str) else want)}, "
                         f"got {_json_type(got)}"),
        "enum": lambda: f"{_show(got)} is not one of {_show(want)}",
        "const": lambda: f"must be {_show(want)}",
        "pattern": lambda: f"{_show(got)} does not match {want!r}",
        "minLength": lambda: f"needs at least {want} characters",
        "maxLength": lambda: f"takes at most {want} characters",
        "minItems": lambda: f"needs at least {want} items",
        "maxItems": lambda: f"takes at most {want} items",
        "minimum": lambda: f"must be at least {want}",
        "maximum": lambda: f"must be at most {want}",
        "exclusiveMinimum": lambda: f"must be more than {want}",
        "exclusiveMaximum": lambda: f"must be less than {want}",
        "multipleOf": lambda: f"must be a multiple of {want}",
        "uniqueItems": lambda: "items must be unique",
        "format": lambda: f"{_show(got)} is not a valid {want}",
    }.get(str(kind))
    message = said() if said is not None else error.message
    return f"{where}: {message if len(message) <= 200 else message[:197] + '...'}"
