"""The config's ``data.options``: each data set's options typed, in range and coerced."""

from __future__ import annotations

import inspect
import math

from .files import ConfigError, source_of


def check_data_options(options: dict, filename) -> dict:
    """The config's ``data.options``, checked and coerced: known embedded data sets, only their
    generator's arguments (:mod:`sigprop.data.embedded`; downloaded sets take none), each of
    the type of the argument's default and in its range (:data:`~sigprop.data.embedded.OPTION_RANGES`).
    ``--config`` gives nested values as strings: ``'-5'`` for an integer option becomes ``-5``
    (and is then refused as out of range), ``'abc'`` is refused.  Returns the coerced options;
    errors name the source (``filename``: a file or :class:`ConfigSources`) and the key."""
    from sigprop.data import catalog, embedded

    out = {}
    for name, opts in (options or {}).items():
        path = ("data", "options", name)
        if name not in catalog.DATASETS:
            raise ConfigError(
                f"{source_of(filename, path)}: key 'data.options.{name}': unknown "
                f"dataset '{name}' (known: {', '.join(sorted(catalog.DATASETS))})"
            )
        spec = catalog.get(name)
        params = (
            inspect.signature(getattr(embedded, spec.fmt)).parameters
            if spec.source == "embedded"
            else {}
        )
        out[name] = {}
        for key, value in (opts or {}).items():
            where = f"{source_of(filename, path)}: key 'data.options.{name}.{key}'"
            if key not in params:
                raise ConfigError(
                    f"{where}: unknown option (allowed: "
                    f"{', '.join(params) or 'none, it is downloaded'})"
                )
            out[name][key] = _option_value(value, params[key].default, key, where)
    return out


def _option_value(value, default, key: str, where: str):
    """One data option coerced to the type of its default, finite and in range."""
    typ = type(default)
    v = value
    if isinstance(v, str) and typ in (int, float):
        try:
            v = (
                float(v)
                if typ is float
                else (int(v) if v.strip().lstrip("+-").isdigit() else float(v))
            )
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if typ is int and isinstance(v, float) and v.is_integer():
        v = int(v)
    if typ is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, typ) or isinstance(v, bool) != (typ is bool):
        raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{where}: {value!r} is not a finite number")
    from sigprop.data.embedded import OPTION_RANGES

    lo, hi, closed = OPTION_RANGES.get(key, (None, None, True))
    low_bad = lo is not None and (v < lo if closed else v <= lo)
    high_bad = hi is not None and (v > hi if closed else v >= hi)
    if low_bad or high_bad:
        rng = (
            f"[{lo}, {hi if hi is not None else 'inf'}]"
            if closed
            else f"({lo}, {hi if hi is not None else 'inf'})"
        )
        raise ConfigError(f"{where}: {value!r} is out of range {rng}")
    return v
