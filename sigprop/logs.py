"""Logging for workflow scripts: everything goes to the rule's log file."""

from __future__ import annotations

import logging
import sys


def setup(logfile: str | None = None, level: int = logging.INFO) -> logging.Logger:
    handlers = [logging.FileHandler(logfile, mode="w")] if logfile else []
    handlers.append(logging.StreamHandler(sys.stderr))
    logging.basicConfig(level=level, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return logging.getLogger("sigprop")


def script_log(snakemake) -> logging.Logger:
    log = snakemake.log[0] if len(snakemake.log) else None
    return setup(log)
