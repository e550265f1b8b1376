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
    """The rule's logger; an uncaught error is also written to the rule's log file (with its
    traceback), not only to Snakemake's stderr, so ``results/logs/...`` says why a job failed."""
    log = snakemake.log[0] if len(snakemake.log) else None
    logger = setup(log)

    def hook(kind, value, tb):  # the handlers write it to the log file and to stderr
        logger.error("job failed: %s: %s", kind.__name__, value, exc_info=(kind, value, tb))
        logging.shutdown()

    sys.excepthook = hook
    return logger
