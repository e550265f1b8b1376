"""``sigprop stand-ins OUT``: the smoke run's stand-in raw files of the downloaded data sets
(:func:`sigprop.data.stand_ins.write_stand_ins`), sized for the paper-scale runs of a config."""

from __future__ import annotations

import sys

COMMANDS = ("stand-ins",)


def register(subparsers) -> None:
    si = subparsers.add_parser(
        "stand-ins",
        help="write stand-in raw files of the downloaded data sets for the smoke run",
        description="Write small random files in the real raw formats (IDX, CIFAR binary, "
        "EMNIST gzip.zip, Gisette text, Tiny ImageNet zip) under OUT/<dataset>/, and "
        "OUT/stand-ins.yaml with their digests and sizes, to pass to snakemake with "
        "--configfile config/config.yaml OUT/stand-ins.yaml --config scale=paper "
        "smoke=true.  Never use them for a real run.",
    )
    si.add_argument("out", help="folder to write into")
    si.add_argument(
        "--datasets", default=None, help="comma-separated data sets [default: every downloaded one]"
    )
    si.add_argument(
        "--configfile",
        default="config/config.yaml",
        help="sizes fit this config's paper-scale runs (each set holds at least "
        "its largest batch) [default: config/config.yaml]",
    )
    si.set_defaults(func=main)


def main(args: dict) -> int:
    """Write the stand-ins and print each set's sizes; 2 for an unknown data set or a bad
    config."""
    from sigprop.data import catalog
    from sigprop.data.stand_ins import sizes_for, write_stand_ins
    from sigprop.tools import plan

    names = args["datasets"].split(",") if args["datasets"] else None
    try:
        for name in names or []:  # a wrong name fails before the studies are built
            catalog.get(name)
        _, studies = plan.load(
            args["configfile"], ["scale=paper", "smoke=true", "scale_overrides={}"]
        )
        runs = [r for s in studies.values() for r in s.runs]
        frag = write_stand_ins(args["out"], names, sizes_for(runs, names))
    except (KeyError, ValueError) as e:
        print(f"sigprop stand-ins: {e}", file=sys.stderr)
        return 2
    for name, n in frag["data"]["sizes"].items():
        print(f"{name}: {n['n_train']} train, {n['n_test']} test")
    print(f"wrote {args['out']}/stand-ins.yaml")
    return 0
