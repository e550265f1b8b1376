"""The raw-format writers of the data tests: :mod:`sigprop.data.raw_writers` (one place).

Holds no tests.  Test modules load it by file path, so it works whatever pytest's import mode is.
"""

from sigprop.data.raw_writers import *  # noqa: F401,F403
from sigprop.data.raw_writers import TINY_COLORS, TINY_WNIDS, _add_member, idx_bytes  # noqa: F401
