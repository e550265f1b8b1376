"""Reading the run's config and study files, and errors that name the file (or ``--config``)
and the key: the size bound, YAML loading, finite numbers, schema failures explained.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration problem; the message names the file and the key."""


MESSAGE_CHARS = 300
"""The most characters of a value an error message quotes."""


NODE_BUDGET = 200_000
"""The most values (mapping entries and list items, counted through YAML aliases) a config or
study file may hold: a file of nested aliases (a "billion laughs") is refused before
validation, which would otherwise expand it while building its error message."""


def check_size(obj, source, budget: int = NODE_BUDGET) -> None:
    """Stop, naming ``source``, when ``obj`` holds more than ``budget`` values counted as a tree
    (aliases expand: one list referenced nine times counts nine times)."""
    n, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            n += len(o)
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            n += len(o)
            stack.extend(o)
        if n > budget:
            raise ConfigError(
                f"{source}: holds more than {budget:,} values once its YAML aliases "
                "are expanded (aliases nested inside aliases?); refused before "
                "validation"
            )


def key_path(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def explain(exc: BaseException, filename) -> str:
    """Turn a jsonschema ValidationError (possibly wrapped by Snakemake) into one line;
    ``filename`` is a file name or a :class:`ConfigSources`."""
    err = _find_validation_error(exc)
    if err is None:
        return f"{filename}: {exc}"
    where = key_path(err.absolute_path)
    filename = source_of(filename, list(err.absolute_path))
    msg = err.message
    if len(msg) > MESSAGE_CHARS:  # jsonschema quotes the value: never print it whole
        msg = msg[:MESSAGE_CHARS] + f"... ({len(msg) - MESSAGE_CHARS} more characters)"
    if err.validator == "additionalProperties":
        known = sorted(err.schema.get("properties", {}))
        msg += f" (known keys: {', '.join(known)})" if known else ""
    return f"{filename}: key '{where}': {msg}"


def _find_validation_error(exc):
    import jsonschema

    seen = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen or e is None:
            continue
        seen.add(id(e))
        if isinstance(e, jsonschema.ValidationError):
            return e
        stack += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
        stack += [e.__cause__, e.__context__]
    return None


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    check_size(data, path)
    return data


def check_finite(obj, source, path: tuple = ()) -> None:
    """Every number in a config is finite: NaN passes every range check of a schema (it fails
    every comparison), so it is refused here, naming the key.  ``source`` is the file name, or
    a :class:`ConfigSources` that says which file (or ``--config``) a key came from."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            check_finite(v, source, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            check_finite(v, source, path + (i,))
    elif isinstance(obj, float) and not math.isfinite(obj):
        raise ConfigError(
            f"{source_of(source, path)}: key '{key_path(path)}': {obj!r} is not a finite number"
        )


class ConfigSources:
    """Where each top-level key of the run's config came from: ``--config`` on the command line,
    or the config file(s); error messages name the right one."""

    def __init__(self, files, cli: dict | None = None):
        self.files = ", ".join(str(f) for f in files) or "the config"
        self.cli = set(cli or {})

    def of(self, path) -> str:
        top = path[0] if path else None
        return "--config" if top in self.cli else self.files

    def __str__(self) -> str:
        return self.files


def source_of(source, path) -> str:
    return source.of(path) if isinstance(source, ConfigSources) else str(source)


def snakemake_validator(schemas: str | Path):
    """The ``validate`` of :func:`load_run` for the Snakefile: Snakemake's schema check of a
    schema file in ``schemas`` (it fills the schema's defaults), a :class:`ConfigError` naming
    the file or ``--config`` the offending key came from."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    def check(obj, schema_file: str, where) -> None:
        try:
            validate(obj, str(Path(schemas) / schema_file))
        except WorkflowError as e:
            raise ConfigError(explain(e, where)) from None

    return check
