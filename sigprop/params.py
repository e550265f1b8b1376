"""Typed study parameters: dataclasses with defaults, parsed from YAML with errors that name
the key path and the value.

A study declares each section of its config file (``measure:``, ``theory:``, ``analysis:``,
``claims:``) as a frozen dataclass whose fields carry their type, default and allowed range
(:func:`param`).  :func:`parse` turns a YAML mapping into an instance and refuses, with the key
path and the value in the message:

- an unknown key (with the closest known key as a suggestion: ``zmax`` -> ``z_max``);
- a value of the wrong type (a string where a number is wanted, a float where an integer is);
- a number that is NaN or infinite, or outside the field's range (``ge``, ``gt``, ``le``,
  ``lt``), or a string outside the field's ``choices``;
- a list shorter than ``min_len``.

Supported field types: ``bool``, ``int``, ``float``, ``str``, ``typing.Literal[...]``,
``tuple[T, ...]`` (YAML lists; stored as tuples so that instances are immutable),
``dict[str, T]``, ``T | None`` and nested parameter dataclasses.  :func:`to_dict` gives the
JSON-able form that the workflow passes to jobs (and that decides when a job reruns).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from typing import Any, Literal, get_args, get_origin


class ParamError(ValueError):
    """A parameter does not fit its declared type; the message names the key path."""


def param(
    default: Any = dataclasses.MISSING,
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: tuple | None = None,
    min_len: int | None = None,
    doc: str = "",
    execution: bool = False,
):
    """A dataclass field with a default, a range and a one-line description.

    ``execution``: the value only sets how the work is carried out (a batch or chunk size), not
    what it computes: the job gets it outside its cache key (:func:`execution_values`), so
    changing it reruns nothing.

    A dataclass default (a nested parameter block, given as its class) is built by its class,
    so that every instance gets its own; a dict default is copied per instance; a list default
    becomes a tuple (lists parse to tuples).
    """
    meta = {
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "choices": choices,
        "min_len": min_len,
        "doc": doc,
        "execution": execution,
    }
    if dataclasses.is_dataclass(default) and isinstance(default, type):
        return dataclasses.field(default_factory=default, metadata=meta)
    if isinstance(default, dict):
        return dataclasses.field(default_factory=lambda d=default: dict(d), metadata=meta)
    if isinstance(default, list):
        default = tuple(default)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class NoParams:
    """A section a study does not use: only an empty mapping parses."""


def parse(cls: type, data: Any, where: str) -> Any:
    """An instance of the parameter dataclass ``cls`` from ``data`` (a mapping or None);
    ``where`` is the key path used in messages (e.g. ``analysis``)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamError(f"key '{where}': expected a mapping, got {_show(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in fields]
    if unknown:
        k = unknown[0]
        near = difflib.get_close_matches(str(k), list(fields), n=1)
        hint = f"; did you mean '{near[0]}'?" if near else ""
        known = ", ".join(fields) or "none"
        raise ParamError(
            f"key '{_join(where, k)}': unknown key (value {_show(data[k])}; known "
            f"keys: {known}{hint})"
        )
    kw = {}
    for name, f in fields.items():
        if name in data:
            v = data[name]
        elif f.default is not dataclasses.MISSING:
            v = f.default
        elif f.default_factory is not dataclasses.MISSING:
            v = f.default_factory()
        else:
            raise ParamError(f"key '{_join(where, name)}': missing (it has no default)")
        # defaults go through the same checks, so a value is stored in one canonical form
        # (1 and 1.0 for a float give the same job parameters)
        kw[name] = _value(hints[name], v, _join(where, name), f.metadata)
    return cls(**kw)


def to_dict(obj: Any) -> Any:
    """The JSON-able form of a parameter instance (tuples as lists, nested blocks as dicts)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (tuple, list)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return obj


def execution_values(block) -> dict:
    """The execution-only fields of a parameter block (``param(..., execution=True)``, top level
    of the block) and their values."""
    if not dataclasses.is_dataclass(block):
        return {}
    return {
        f.name: getattr(block, f.name)
        for f in dataclasses.fields(block)
        if f.metadata.get("execution")
    }


def without_execution(block):
    """``block`` with its execution-only fields at their defaults: what a cache key hashes."""
    if not dataclasses.is_dataclass(block):
        return block
    fields = {f.name: f for f in dataclasses.fields(block)}
    return dataclasses.replace(
        block,
        **{
            name: (
                fields[name].default
                if fields[name].default is not dataclasses.MISSING
                else fields[name].default_factory()
            )
            for name in execution_values(block)
        },
    )


def describe(cls: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """``(key, type, default, doc)`` per field, nested blocks flattened (``inner.rate``; the
    items of a list of blocks as ``panels[].activation``, of a mapping as
    ``simulations.<name>.part``), defaults as JSON (for docs and ``sigprop params``)."""
    import json

    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = _join(prefix, f.name) if prefix else f.name
        t = hints[f.name]
        if dataclasses.is_dataclass(t):
            out += describe(t, key)
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        out.append((key, _type_name(t), json.dumps(to_dict(default)), f.metadata.get("doc", "")))
        args = get_args(t)
        if get_origin(t) in (tuple, list) and args and dataclasses.is_dataclass(args[0]):
            out += describe(args[0], f"{key}[]")
        elif get_origin(t) is dict and dataclasses.is_dataclass(args[1]):
            out += describe(args[1], f"{key}.<name>")
    return out


def merge(base: dict | None, over: dict | None) -> dict:
    """``over`` merged into ``base``: mappings merge key by key, anything else replaces."""
    out = dict(base or {})
    for k, v in (over or {}).items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- checking one value -------------------------------------------------------------------


def _value(t: Any, v: Any, where: str, meta: dict | None = None) -> Any:
    meta = meta or {}
    origin = get_origin(t)
    if origin in (typing.Union, types.UnionType):
        args = get_args(t)
        if v is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        errors = []
        for a in rest:
            try:
                return _value(a, v, where, meta)
            except ParamError as e:
                errors.append(str(e))
        raise ParamError(
            errors[0]
            if len(errors) == 1
            else f"key '{where}': {_show(v)} is none of {_type_name(t)}"
        )
    if dataclasses.is_dataclass(t):
        return parse(t, to_dict(v) if isinstance(v, t) else v, where)
    if origin is Literal:
        allowed = get_args(t)
        if v not in allowed or isinstance(v, bool) != any(isinstance(a, bool) for a in allowed):
            raise ParamError(
                f"key '{where}': {_show(v)} is not one of {', '.join(repr(a) for a in allowed)}"
            )
        return v
    if origin in (tuple, list):
        if not isinstance(v, (list, tuple)):
            raise ParamError(f"key '{where}': expected a list, got {_show(v)}")
        args = get_args(t)
        item = args[0] if args else Any
        if meta.get("min_len") is not None and len(v) < meta["min_len"]:
            raise ParamError(
                f"key '{where}': a list of at least {meta['min_len']} item(s) "
                f"is needed, got {len(v)}"
            )
        inner = {k: meta.get(k) for k in ("ge", "gt", "le", "lt", "choices")}
        return tuple(_value(item, x, f"{where}[{i}]", inner) for i, x in enumerate(v))
    if origin is dict:
        if not isinstance(v, dict):
            raise ParamError(f"key '{where}': expected a mapping, got {_show(v)}")
        _, vt = get_args(t)
        inner = {k: meta.get(k) for k in ("ge", "gt", "le", "lt", "choices")}
        return {str(k): _value(vt, x, _join(where, k), inner) for k, x in v.items()}
    if t is Any:
        return v
    if t is bool:
        if not isinstance(v, bool):
            raise ParamError(f"key '{where}': expected true or false, got {_show(v)}")
        return v
    if t is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParamError(f"key '{where}': expected an integer, got {_show(v)}")
        _range(v, where, meta)
        return v
    if t is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ParamError(f"key '{where}': expected a number, got {_show(v)}")
        v = float(v)
        if not math.isfinite(v):
            raise ParamError(f"key '{where}': {_show(v)} is not a finite number")
        _range(v, where, meta)
        return v
    if t is str:
        if not isinstance(v, str):
            raise ParamError(f"key '{where}': expected a string, got {_show(v)}")
        if meta.get("choices") and v not in meta["choices"]:
            raise ParamError(
                f"key '{where}': '{v}' is not one of {', '.join(map(repr, meta['choices']))}"
            )
        return v
    raise TypeError(f"unsupported parameter type {t!r} at {where}")


def _range(v: float, where: str, meta: dict) -> None:
    for key, ok, word in (
        ("ge", lambda a, b: a >= b, ">="),
        ("gt", lambda a, b: a > b, ">"),
        ("le", lambda a, b: a <= b, "<="),
        ("lt", lambda a, b: a < b, "<"),
    ):
        bound = meta.get(key)
        if bound is not None and not ok(v, bound):
            raise ParamError(
                f"key '{where}': {_show(v)} is out of range (must be {word} {bound:g})"
            )


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _show(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text[:60]}" if isinstance(v, str) else text[:60]


def _type_name(t: Any) -> str:
    origin = get_origin(t)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(t))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(t))
    if origin in (tuple, list):
        return f"list of {_type_name(get_args(t)[0])}"
    if origin is dict:
        return f"mapping of {_type_name(get_args(t)[1])}"
    if t is type(None):
        return "null"
    return getattr(t, "__name__", str(t))
