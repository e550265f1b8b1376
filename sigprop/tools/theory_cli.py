"""``sigprop theory <command> [--param value ...]``: theory predictions as JSON.

Each theory module of :data:`THEORY_MODULES` declares its commands in a module-level
``CLI_COMMANDS`` list (name, help, params, fn); this module only turns them into argparse
sub-commands, so a new theory function becomes a command where it is defined.  Parameters marked
``list`` take comma-separated values (``--rho 1,0.99,0.98``).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys

from sigprop.tools.json_out import print_json

COMMANDS = ("theory",)
THEORY_MODULES = (
    "meanfield",
    "gradients",
    "kernels",
    "finite_width",
    "ensembles",
    "pruning",
    "diversity",
)


@functools.cache
def theory_commands() -> dict[str, dict]:
    """All commands of the theory modules, by name (a clash is a programming error)."""
    out: dict[str, dict] = {}
    for mod in THEORY_MODULES:
        module = importlib.import_module(f"sigprop.theory.{mod}")
        for cmd in getattr(module, "CLI_COMMANDS", []):
            if cmd["name"] in out:
                raise RuntimeError(f"theory command '{cmd['name']}' defined twice")
            out[cmd["name"]] = {**cmd, "module": mod}
    return out


def _parse_value(text: str, typ, name: str):
    try:
        if typ is bool:
            if text.lower() in ("1", "true", "yes"):
                return True
            if text.lower() in ("0", "false", "no"):
                return False
            raise ValueError
        return typ(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--{name}: expected {typ.__name__}, got {text!r}"
        ) from None


def _converter(spec: dict, name: str):
    typ = spec.get("type", float)
    if spec.get("list"):
        return lambda s: [_parse_value(t.strip(), typ, name) for t in s.split(",") if t.strip()]
    return lambda s: _parse_value(s, typ, name)


def register(subparsers) -> None:
    """``sigprop theory`` with one sub-command per entry of :func:`theory_commands`."""
    theory = subparsers.add_parser(
        "theory",
        help="print theory predictions as JSON",
        description="Print theory predictions of the five papers as JSON. "
        "Use 'sigprop theory <command> --help' for a command's parameters.",
    )
    tsub = theory.add_subparsers(dest="command", required=True, metavar="<command>")
    for name, cmd in sorted(theory_commands().items()):
        p = tsub.add_parser(name, help=f"{cmd['help']} [{cmd['module']}]", description=cmd["help"])
        for pname, spec in cmd.get("params", {}).items():
            flag = "--" + pname.replace("_", "-")
            default = spec.get("default")
            required = default is None and not spec.get("optional", False)
            helptext = spec.get("help", "")
            if spec.get("list"):
                helptext += " (comma-separated list)"
            if not required:
                helptext += f" [default: {default}]"
            p.add_argument(
                flag,
                dest=pname,
                type=_converter(spec, pname),
                default=default,
                required=required,
                help=helptext,
            )
    theory.set_defaults(func=main)


def main(args: dict) -> int:
    """Run the theory command ``args["command"]`` with the other entries of ``args`` as its
    parameters and print the command, its parameters and its result as JSON; 2 when the
    function refuses its parameters."""
    cmd = theory_commands()[args.pop("command")]
    try:
        result = cmd["fn"](**args)
    except (ValueError, TypeError) as e:
        print(f"sigprop theory {cmd['name']}: {e}", file=sys.stderr)
        return 2
    print_json({"command": cmd["name"], "params": args, "result": result})
    return 0
