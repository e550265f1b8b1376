"""``sigprop claims-doc [FILE]``: the verdict tables of docs/papers.md regenerated from a results
folder and the committed evidence (:func:`sigprop.claims.doc_tables.render`), or checked with
``--check``; ``--paper ID`` fills one paper's block from a run of that paper's studies alone."""

from __future__ import annotations

import sys
from pathlib import Path

COMMANDS = ("claims-doc",)


def register(subparsers) -> None:
    cdoc = subparsers.add_parser(
        "claims-doc",
        help="regenerate the verdict tables of docs/papers.md from a results folder",
        description="Replace each <!-- claims:{paper}:{scale}:start/end --> block of a Markdown "
        "file by the headline and every claim of results/papers/{paper}/claims.parquet "
        "beside the committed paper-scale verdicts (docs/evidence/paper-scale), each "
        "read against its study file's regime; with --check, exit 1 when the file "
        "differs from what it would write.",
    )
    cdoc.add_argument("file", nargs="?", default="docs/papers.md")
    cdoc.add_argument("--results", default="results", help="results folder [default: results]")
    cdoc.add_argument(
        "--scale", default="quick", help="the scale the results were run at [default: quick]"
    )
    cdoc.add_argument(
        "--evidence",
        default="docs/evidence/paper-scale",
        help="committed paper-scale verdicts [default: docs/evidence/paper-scale]",
    )
    cdoc.add_argument(
        "--ladder",
        default="docs/evidence/ladder",
        help="committed ladder rungs and trends [default: docs/evidence/ladder]",
    )
    cdoc.add_argument(
        "--configfile",
        default="config/config.yaml",
        help="the config whose study files declare scales and regimes "
        "[default: config/config.yaml]",
    )
    cdoc.add_argument(
        "--paper",
        action="append",
        default=None,
        help="fill only this paper's block (repeatable), e.g. after a run of its studies alone; "
        "the other blocks stay as they are [default: every block]",
    )
    cdoc.add_argument("--check", action="store_true", help="compare, do not write")
    cdoc.set_defaults(func=main)


def main(args: dict) -> int:
    """Rewrite (or with ``--check`` compare) the file's claims blocks: 1 when ``--check`` finds
    a difference, 2 when the file has no block of the scale."""
    from sigprop.claims.doc_tables import render

    path = Path(args["file"])
    old = path.read_text()
    info = {}
    if Path(args["configfile"]).exists():
        from sigprop.tools import plan

        _, studies = plan.load(args["configfile"], [f"scale={args['scale']}"])
        info = {n: st.summary_info() for n, st in studies.items()}
    new, found = render(
        old,
        args["results"],
        args["scale"],
        args["evidence"],
        info,
        args["ladder"],
        papers=args.get("paper"),
    )
    missing = sorted(set(args.get("paper") or ()) - set(found))
    if not found or missing:
        which = ", ".join(missing) if missing else "NNN"
        print(
            f"sigprop claims-doc: {path} has no <!-- claims:{which}:{args['scale']}:start --> "
            "block",
            file=sys.stderr,
        )
        return 2
    if args["check"]:
        if new != old:
            print(
                f"{path}: the verdict tables of papers {found} differ from "
                f"{args['results']}: rerun `sigprop claims-doc {path}`",
                file=sys.stderr,
            )
            return 1
        return 0
    from sigprop import atomic

    atomic.write_text(str(path), new)
    print(f"{path}: papers {', '.join(found)} ({args['scale']}) from {args['results']}")
    return 0
