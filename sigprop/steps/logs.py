"""Logging for workflow scripts: everything goes to the rule's log file."""

from __future__ import annotations

import logging
import sys


def setup(logfile: str | None = None, level: int = logging.INFO) -> logging.Logger:
    handlers = [logging.FileHandler(logfile, mode="w")] if logfile else []
    handlers.append(logging.StreamHandler(sys.stderr))
    logging.basicConfig(
        level=level,
        handlers=handlers,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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


# Snakemake's own words when a file it expects is not there: it blames the file system
_MISSING = (
    "Missing files after",
    "MissingOutputException",
    "filesystem latency",
    "MissingInputException",
)


def explain_failure(log_text: str) -> str:
    """A plain-language note for failures whose Snakemake message misleads (run by the
    Snakefile's ``onerror``).  Snakemake reports a file that disappeared while the run went on
    (deleted, moved, or a full disk) as possible "filesystem latency"; this names the files and
    says what to do.  Empty when there is nothing to add."""
    if not any(m in log_text for m in _MISSING):
        return ""
    import re

    files = sorted(set(re.findall(r"(results/[^\s,:'\"]+)", log_text.split("Missing", 1)[-1])))
    which = ", ".join(files[:8]) or "(see the log above)"
    return (
        "sigprop: Snakemake could not find file(s) it had planned with: " + which + ". "
        "Unless results/ is on a slow network file system (then raise --latency-wait), the "
        "file was deleted or moved while the workflow ran, or the disk filled up. Nothing "
        "else was lost: run `snakemake` again and the missing files are rebuilt."
    )
