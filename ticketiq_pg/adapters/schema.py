"""JSON Schemas for a tool's arguments: derived from Python types, and a small validator.

A tool's ``parameters`` may be given as a JSON Schema (a dict), or derived here
(:func:`schema_from`) from a typed function's signature, a dataclass, a ``TypedDict`` or,
where pydantic is installed, a pydantic model.  :func:`validate` checks the arguments a
model sent against the schema and says what is wrong in one line the model can act on
(``arguments.ticket_id: required``); it covers ``type``, ``required``, ``properties``,
``additionalProperties``, ``items``, ``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``/
``not``, local ``$ref``\\ s, and string, number and array bounds.

This module imports nothing of ticketiq_pg: ``ticketiq_pg.agent`` uses it.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["schema_from", "type_schema", "validate", "object_schema"]

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
    anything else, or a schema that is not an object schema.
    """
    if source is None:
        return None
    if isinstance(source, Mapping):
        schema = json.loads(json.dumps(dict(source)))  # a plain JSON copy, or TypeError
        if schema.get("type", "object") != "object":
            raise TypeError("a tool's parameters must be an object schema ({'type': 'object'})")
        return schema
    if isinstance(source, type) and callable(getattr(source, "model_json_schema", None)):
        schema = source.model_json_schema()
        return _check_object(schema)
    defs: dict[str, Any] = {}
    if isinstance(source, type) and (dataclasses.is_dataclass(source) or _is_typeddict(source)):
        schema = _class_schema(source, defs)
    elif callable(source):
        schema = _function_schema(source, defs)
    else:
        raise TypeError(f"cannot derive a JSON Schema from {source!r}")
    if defs:
        schema["$defs"] = defs
    return schema


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


# -- the validator ---------------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is(value: Any, kind: str) -> bool:
    actual = _json_type(value)
    if kind == "number":
        return actual in ("integer", "number")
    if kind == "integer":
        return actual == "integer" or (actual == "number" and math.isfinite(value)
                                       and float(value).is_integer())
    return actual == kind


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(schema: Mapping[str, Any] | None, value: Any, path: str = "arguments") -> str | None:
    """What is wrong with ``value`` under ``schema``, in one line, or None when it conforms."""
    if schema is None:
        return None
    return _check(schema, value, path, schema)


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None  # a remote reference is not followed: accepted
    node: Any = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _check(schema: Any, value: Any, path: str, root: Mapping[str, Any]) -> str | None:
    if schema is True or schema == {}:
        return None
    if schema is False:
        return f"{path}: not allowed"
    if not isinstance(schema, Mapping):
        return None
    if "$ref" in schema:
        target = _resolve(str(schema["$ref"]), root)
        if target is not None:
            error = _check(target, value, path, root)
            if error:
                return error
    kinds = schema.get("type")
    if kinds is not None:
        options = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in options):
            return f"{path}: expected {' or '.join(options)}, got {_json_type(value)}"
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        return f"{path}: {_show(value)} is not one of {_show(schema['enum'])}"
    if "const" in schema and not _same(value, schema["const"]):
        return f"{path}: must be {_show(schema['const'])}"
    for check in (_combinators, _object, _array, _string, _number):
        error = check(schema, value, path, root)
        if error:
            return error
    return None


def _same(a: Any, b: Any) -> bool:
    numbers = {_json_type(a), _json_type(b)} <= {"integer", "number"}
    return (numbers or _json_type(a) == _json_type(b)) and a == b


def _combinators(schema: Mapping[str, Any], value: Any, path: str,
                 root: Mapping[str, Any]) -> str | None:
    for sub in schema.get("allOf", ()):
        error = _check(sub, value, path, root)
        if error:
            return error
    if "anyOf" in schema:
        errors = [_check(sub, value, path, root) for sub in schema["anyOf"]]
        if all(errors):
            return _first_of(errors, path)
    if "oneOf" in schema:
        errors = [_check(sub, value, path, root) for sub in schema["oneOf"]]
        passed = sum(1 for e in errors if e is None)
        if passed == 0:
            return _first_of(errors, path)
        if passed > 1:
            return f"{path}: matches more than one of the allowed shapes"
    if "not" in schema and _check(schema["not"], value, path, root) is None:
        return f"{path}: matches a shape that is not allowed"
    return None


def _first_of(errors: list[str | None], path: str) -> str:
    found = [e for e in errors if e]
    if len(found) == 1:
        return found[0]
    return f"{path}: matches none of the allowed shapes ({'; '.join(found[:3])})"


def _object(schema: Mapping[str, Any], value: Any, path: str,
            root: Mapping[str, Any]) -> str | None:
    if not isinstance(value, Mapping):
        return None
    for name in schema.get("required", ()):
        if name not in value:
            return f"{path}.{name}: required"
    properties = schema.get("properties", {})
    for name, sub in properties.items():
        if name in value:
            error = _check(sub, value[name], f"{path}.{name}", root)
            if error:
                return error
    extra = schema.get("additionalProperties", True)
    patterns = schema.get("patternProperties", {})
    for name in value:
        if name in properties or any(re.search(p, name) for p in patterns):
            continue
        if extra is False:
            allowed = ", ".join(properties) or "none"
            return f"{path}.{name}: not an allowed property (allowed: {allowed})"
        if isinstance(extra, Mapping):
            error = _check(extra, value[name], f"{path}.{name}", root)
            if error:
                return error
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        return f"{path}: needs at least {schema['minProperties']} properties"
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        return f"{path}: takes at most {schema['maxProperties']} properties"
    return None


def _array(schema: Mapping[str, Any], value: Any, path: str,
           root: Mapping[str, Any]) -> str | None:
    if not isinstance(value, list | tuple):
        return None
    prefix = schema.get("prefixItems", ())
    for i, (item, sub) in enumerate(zip(value, prefix, strict=False)):
        error = _check(sub, item, f"{path}[{i}]", root)
        if error:
            return error
    items = schema.get("items")
    if isinstance(items, list):  # the older tuple form
        for i, (item, sub) in enumerate(zip(value, items, strict=False)):
            error = _check(sub, item, f"{path}[{i}]", root)
            if error:
                return error
    elif items is not None:
        for i, item in enumerate(value[len(prefix):], start=len(prefix)):
            error = _check(items, item, f"{path}[{i}]", root)
            if error:
                return error
    if "minItems" in schema and len(value) < schema["minItems"]:
        return f"{path}: needs at least {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{path}: takes at most {schema['maxItems']} items"
    if schema.get("uniqueItems"):
        seen = [json.dumps(v, sort_keys=True, default=str) for v in value]
        if len(set(seen)) != len(seen):
            return f"{path}: items must be unique"
    return None


def _string(schema: Mapping[str, Any], value: Any, path: str,
            root: Mapping[str, Any]) -> str | None:
    if not isinstance(value, str):
        return None
    if "minLength" in schema and len(value) < schema["minLength"]:
        return f"{path}: needs at least {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{path}: takes at most {schema['maxLength']} characters"
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return f"{path}: {_show(value)} does not match {schema['pattern']!r}"
    return None


def _number(schema: Mapping[str, Any], value: Any, path: str,
            root: Mapping[str, Any]) -> str | None:
    if _json_type(value) not in ("integer", "number"):
        return None
    if "minimum" in schema and value < schema["minimum"]:
        return f"{path}: must be at least {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"{path}: must be at most {schema['maximum']}"
    low = schema.get("exclusiveMinimum")
    if isinstance(low, int | float) and not isinstance(low, bool) and value <= low:
        return f"{path}: must be more than {low}"
    high = schema.get("exclusiveMaximum")
    if isinstance(high, int | float) and not isinstance(high, bool) and value >= high:
        return f"{path}: must be less than {high}"
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0 and not math.isclose(
            value / step, round(value / step)):
        return f"{path}: must be a multiple of {step}"
    return None
