"""What the command-line tools print or write as JSON: :func:`jsonable` makes a result strict
JSON (no NaN or infinity), :func:`print_json` prints it indented on standard output."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def jsonable(x):
    """``x`` with tuples as lists, numpy / torch scalars and arrays as Python numbers and lists,
    paths as strings and non-finite floats as ``"nan"`` / ``"inf"`` / ``"-inf"`` (strict
    JSON)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if not isinstance(x, (str, bytes, int, float, bool)) and hasattr(x, "tolist"):
        return jsonable(x.tolist())  # a tensor or numpy array / scalar
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def print_json(result) -> None:
    """``result`` (:func:`jsonable`) as indented strict JSON and a newline on standard output."""
    json.dump(jsonable(result), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
