"""``sigprop params``: the studies' typed parameters as text or Markdown tables, and the tables
of config/README.md (between its params markers) rewritten in place."""

from __future__ import annotations

import sys
from pathlib import Path

COMMANDS = ("params",)
PARAMS_MARKERS = ("<!-- params:start -->\n", "<!-- params:end -->")


def register(subparsers) -> None:
    params = subparsers.add_parser(
        "params",
        help="list the studies' parameters: section, key, type, default, meaning",
        description="Print each study's typed parameters (the measure, theory, analysis and "
        "claims sections of its study file) with their types, defaults and meanings.",
    )
    params.add_argument("kinds", nargs="*", help="study kinds [default: all]")
    params.add_argument(
        "--markdown", action="store_true", help="Markdown tables, as in config/README.md"
    )
    params.add_argument(
        "--write",
        metavar="FILE",
        nargs="?",
        const="config/README.md",
        default=None,
        help="replace the tables between FILE's <!-- params:start --> and "
        "<!-- params:end --> markers in place [default FILE: "
        "config/README.md]",
    )
    params.set_defaults(func=main)


def main(args: dict) -> int:
    """Print the parameters of ``args["kinds"]`` or rewrite ``args["write"]``'s tables; 2 for
    an unknown kind or a file that cannot be rewritten."""
    from sigprop import registry

    unknown = [k for k in args["kinds"] if k not in registry.kinds()]
    if unknown:
        print(
            f"sigprop params: unknown study kind(s) {unknown} (known: "
            f"{', '.join(registry.kinds())})",
            file=sys.stderr,
        )
        return 2
    if args["write"]:
        try:
            changed = write_params(args["write"])
        except (OSError, ValueError) as e:
            print(f"sigprop params --write: {e}", file=sys.stderr)
            return 2
        print(f"{args['write']}: {'updated' if changed else 'already up to date'}", file=sys.stderr)
        return 0
    sys.stdout.write(params_text(args["kinds"] or None, args["markdown"]))
    return 0


def write_params(path: str | Path) -> bool:
    """Replace what lies between the params markers of ``path`` (config/README.md) by every
    study's parameter tables (:func:`params_text`, Markdown); True when the file changed.  A
    file without both markers is a ValueError naming it."""
    from sigprop import atomic

    path = Path(path)
    text = path.read_text()
    start, end = PARAMS_MARKERS
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{path}: no {start.strip()} ... {end} block to replace")
    new = text[: i + len(start)] + params_text(markdown=True) + text[j:]
    if new == text:
        return False
    atomic.write_text(path, new)
    return True


def params_text(kinds: list[str] | None = None, markdown: bool = False) -> str:
    """The parameters of the given study kinds (all when None) as text or Markdown."""
    from sigprop import registry
    from sigprop.contract import SECTIONS
    from sigprop.params import describe

    out = []
    for kind in kinds or registry.kinds():
        spec = registry.spec(kind)
        out.append(
            f"### `{kind}` ({spec.task}; {spec.source})\n"
            if markdown
            else f"{kind} ({spec.task}; {spec.source})"
        )
        any_rows = False
        for section in SECTIONS:
            rows = describe(spec.section_type(section))
            if not rows:
                continue
            any_rows = True
            if markdown:
                out.append(f"`{section}:`\n\n| key | type | default | meaning |\n|---|---|---|---|")
                out += [
                    f"| `{k}` | {t} | `{d}` | {doc.replace('|', chr(92) + '|')} |"
                    for k, t, d, doc in rows
                ]
                out.append("")
            else:
                out += [
                    f"  {section}.{k}: {t} = {d}" + (f"  # {doc}" if doc else "")
                    for k, t, d, doc in rows
                ]
        if not any_rows:
            out.append("No parameters.\n" if markdown else "  (no parameters)")
    return "\n".join(out).rstrip() + "\n"
