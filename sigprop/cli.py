"""The ``sigprop`` command: a registry of the modules that define its sub-commands.

Each module of :data:`COMMAND_MODULES` names its top-level commands in a tuple ``COMMANDS`` and
defines ``register(subparsers)``, which adds their parsers (``subparsers.add_parser``) and sets
``func`` on each (``parser.set_defaults(func=handler)``); the handler takes the parsed arguments
as a dict and returns the exit code.  ``func``, ``prog`` and ``group`` are this module's keys,
not an argument's.

To add a command: write ``COMMANDS``, ``register`` and the handler in its module (e.g.
``sigprop/tools/new_study.py``) and add the module's name to :data:`COMMAND_MODULES`, one line;
tests/test_cli.py checks that ``register`` adds exactly the commands of ``COMMANDS``.  The
modules are imported whenever the parser is built, so they import nothing heavy at module level
(no torch: ``sigprop --help`` stays fast); a command whose work needs torch keeps its arguments
in a light module and imports the work in its handler (:mod:`sigprop.tools.bench_cli`,
:mod:`sigprop.tools.gpu_check_cli`).

A handler's ``ValueError``, ``KeyError`` or ``OSError`` (:data:`EXPECTED_ERRORS`) ends the
command with exit status 2 and one line naming the command (``sigprop bench profile: ...``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMAND_MODULES = (
    "sigprop.tools.theory_cli",  # theory
    "sigprop.tools.bench_cli",  # bench <what>
    "sigprop.tools.params_doc",  # params
    "sigprop.tools.plan",  # plan
    "sigprop.tools.gpu_check_cli",  # gpu-check
    "sigprop.tools.claims_doc",  # claims-doc
    "sigprop.tools.compare",  # compare
    "sigprop.publish.evidence",  # evidence
    "sigprop.publish.ladder",  # ladder
    "sigprop.tools.stand_ins_cli",  # stand-ins
    "sigprop.tools.new_study",  # new-study
)
"""The modules that register the top-level commands, in the order ``sigprop --help`` lists
them."""

EXPECTED_ERRORS = (ValueError, KeyError, OSError)
"""What a command ends with in one line naming its input (the config, a file, a study, a shard,
an argument): a bad config or table (``ConfigError`` and ``TableError`` are ``ValueError``s), an
unknown name, a file that cannot be read or written.  Set ``SIGPROP_TRACEBACK=1`` to see the
traceback instead."""


class Parser(argparse.ArgumentParser):
    """An argument parser (its sub-command parsers too) that records in the parsed arguments,
    as ``prog``, the words of the innermost command parsed (``sigprop bench profile``)."""

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
        if getattr(ns, "prog", None) is None:
            ns.prog = self.prog
        return ns, rest


def build_parser() -> argparse.ArgumentParser:
    """The ``sigprop`` parser: every module of :data:`COMMAND_MODULES` registers its commands."""
    parser = Parser(
        prog="sigprop", description="sigprop: theory predictions and benchmarks as JSON."
    )
    sub = parser.add_subparsers(dest="group", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the handler of the command it names."""
    args = vars(build_parser().parse_args(argv))
    func, prog = args.pop("func"), args.pop("prog")
    del args["group"]
    try:
        return func(args)
    except EXPECTED_ERRORS as e:
        if os.environ.get("SIGPROP_TRACEBACK"):
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError) and e.filename:
            msg = f"{e.filename}: {e.strerror or msg}"
        print(f"{prog}: {' '.join(str(msg).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
