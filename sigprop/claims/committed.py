"""Committed evidence (``docs/evidence/``): claims tables of paper-scale runs and of ladder
rungs, each beside its ``provenance.json``, read only after they are checked against each other
and against the folder they lie in.

A committed claims table carries the stamp the workflow wrote it with (:mod:`sigprop.tables`:
``kind``, ``study``, ``scale``, ``runs``, ``smoke``, row count and content digest) and one key
more, ``provenance``: the digest of its ``provenance.json``, which in turn records the table's
content digest (``claims_content``) and the SHA-256 of the run ids (``runs_sha256``).  So a
table re-saved by another tool (no stamp), a value edited with its metadata kept (content
differs from the stamp), a table or provenance moved to another study's or rung's folder
(study or scale differs from the folder), and an edited provenance (its digest differs from the
stamp's) are all refused, by :func:`verified`, before anything reads the verdicts.

:func:`read_claims` reads a checked paper-scale table against its study file's regime today: a
table committed before a column existed gets its default, and how each row reads follows the
study file's declaration without a rerun (:mod:`sigprop.claims.reading`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from .. import tables

OLD_COLUMNS = tables.CLAIM_COLUMNS[: tables.CLAIM_COLUMNS.index("exploratory") + 1]
"""The columns every committed claims table has (those added later get their defaults)."""

PROVENANCE_KEYS = {
    "study": str,
    "scale": str,
    "commit": str,
    "date": str,
    "machine": dict,
    "runs": int,
    "runs_sha256": str,
    "claim_ids": list,
    "claims_content": str,
}
"""The keys every committed ``provenance.json`` holds, with their JSON types."""
RUNG_KEYS = {"budget": (int, float), "budget_unit": str}
"""The keys a ladder rung's ``provenance.json`` holds beside :data:`PROVENANCE_KEYS`."""


class EvidenceError(tables.TableError):
    """Committed evidence that is not what its folder and provenance say; the message names the
    file, what differs and how to restore it."""


def provenance_digest(prov: dict) -> str:
    """SHA-256 (16 hex digits) of a provenance record as canonical JSON: what the committed
    claims table beside it is stamped with, so that an edit of any key is noticed."""
    text = json.dumps(prov, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def restore_hint(folder: str | Path, study: str, scale: str) -> str:
    """How committed evidence is remade: from git, or by publishing the run again."""
    publish = (
        f"sigprop evidence publish {study}"
        if scale == "paper"
        else f"sigprop ladder publish {study} {scale}"
    )
    return (
        f"restore the committed files (`git checkout -- {folder}`) or publish the run again "
        f"(`{publish}`)"
    )


def read_provenance(path: str | Path, rung: bool = False) -> dict:
    """A committed ``provenance.json``: a JSON object with every key of
    :data:`PROVENANCE_KEYS` (and :data:`RUNG_KEYS` for a ladder rung) of the right type.  An
    unreadable file, or a key missing or of another type, is an :class:`EvidenceError` naming
    the file and the key."""
    path = Path(path)
    try:
        prov = json.loads(path.read_text())
    except FileNotFoundError:
        raise EvidenceError(
            f"{path}: missing (every committed claims table has its provenance.json beside it)"
        ) from None
    except (OSError, ValueError) as e:
        raise EvidenceError(f"{path}: not readable JSON ({e})") from None
    if not isinstance(prov, dict):
        raise EvidenceError(f"{path}: must hold a JSON object, not {type(prov).__name__}")
    want = {**PROVENANCE_KEYS, **(RUNG_KEYS if rung else {})}
    for key, typ in want.items():
        if key not in prov:
            raise EvidenceError(f"{path}: key '{key}' is missing")
        v = prov[key]
        if not isinstance(v, typ) or isinstance(v, bool):
            names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
            raise EvidenceError(f"{path}: key '{key}' must be a {names}, not {v!r:.80}")
    if not all(isinstance(c, str) for c in prov["claim_ids"]):
        raise EvidenceError(f"{path}: key 'claim_ids' must be a list of strings")
    return prov


def committed_stamp(run_stamp: dict, prov: dict) -> dict:
    """The stamp of a committed claims table: the one the workflow wrote it with (its kind,
    study, scale, runs and smoke) and the digest of its provenance."""
    keep = {k: run_stamp[k] for k in ("kind", "study", "scale", "runs", "smoke")}
    return {**keep, "provenance": provenance_digest(prov)}


def _stamp(path: Path, hint: str, missing: str) -> dict:
    """The stamp of a committed table, which it must have (else an :class:`EvidenceError`
    saying it is ``missing`` or unstamped, and ``hint``)."""
    if not path.exists():
        raise EvidenceError(f"{path}: {missing}: {hint}")
    stamp = tables.stamp_of(path)
    if stamp is None:
        raise EvidenceError(
            f"{path}: carries no stamp (re-saved by another tool, or committed "
            f"before tables were stamped): {hint}"
        )
    return stamp


def verified(
    folder: str | Path, study: str, scale: str, rung: bool = False
) -> tuple[pd.DataFrame, dict]:
    """The committed claims table in ``folder`` and its provenance, after checking that they
    belong together and to the folder: the provenance is readable and complete (with a ladder
    rung's keys when ``rung``) and names ``study`` and ``scale``; the table carries a stamp of kind ``claims`` for that study and
    scale, not of a smoke run, whose runs digest is the provenance's, whose provenance digest is
    that of the ``provenance.json`` beside it, and whose content is the table's and the
    provenance's; its rows are the study's and its claim ids those the provenance lists.
    Anything else is an :class:`EvidenceError` naming the file and what differs."""
    folder = Path(folder)
    cp, pp = folder / "claims.parquet", folder / "provenance.json"
    hint = restore_hint(folder, study, scale)
    prov = read_provenance(pp, rung=rung)
    for key, want in (("study", study), ("scale", scale)):
        if prov[key] != want:
            raise EvidenceError(
                f"{pp}: key '{key}' is {prov[key]!r}, but the folder holds {key} {want!r}: {hint}"
            )
    stamp = _stamp(cp, hint, f"missing beside {pp}")
    df = tables.read(cp, OLD_COLUMNS, hint=hint)
    want = {
        "kind": "claims",
        "study": study,
        "scale": scale,
        "smoke": False,
        "runs": prov["runs_sha256"][:12],
        "content": prov["claims_content"],
        "provenance": provenance_digest(prov),
    }
    says = {
        "kind": "but a committed claims table is of kind 'claims'",
        "study": f"but its folder holds study {study!r}",
        "scale": f"but its folder holds scale {scale!r}",
        "smoke": "but a smoke run's verdicts are never committed",
        "runs": f"but {pp.name} records runs {want['runs']!r}",
        "content": f"but {pp.name} records content {want['content']!r}",
        "provenance": f"but {pp.name} as it is now has digest {want['provenance']!r}: it "
        "was edited after publishing, or belongs to another table",
    }
    for key, v in want.items():
        if stamp.get(key) != v:
            raise EvidenceError(f"{cp}: stamped with {key} {stamp.get(key)!r}, {says[key]}: {hint}")
    if df.claim_id.astype(str).tolist() != prov["claim_ids"]:
        raise EvidenceError(f"{cp}: its claim ids differ from those {pp} lists: {hint}")
    if len(df) and set(df.study.astype(str)) != {study}:
        raise EvidenceError(
            f"{cp}: holds rows of study {sorted(set(df.study.astype(str)))}, not {study!r}: {hint}"
        )
    return df, prov


def verified_paper_scale(folder: str | Path) -> tuple[pd.DataFrame, dict]:
    """:func:`verified` for ``docs/evidence/paper-scale/<study>/``."""
    folder = Path(folder)
    return verified(folder, folder.name, "paper")


def verified_rung(folder: str | Path) -> tuple[pd.DataFrame, dict]:
    """:func:`verified` for a ladder rung, ``docs/evidence/ladder/<study>/<rung>/``."""
    folder = Path(folder)
    return verified(folder, folder.parent.name, folder.name, rung=True)


def trend_stamp(study: str, rungs: dict) -> dict:
    """The stamp of a committed ``trend.parquet``: its study and, per rung it was computed from
    (lowest first), that rung's claims content digest."""
    return {"kind": "trend", "study": study, "rungs": dict(rungs)}


def verified_trend(path: str | Path) -> pd.DataFrame:
    """A committed ``docs/evidence/ladder/<study>/trend.parquet`` as stored (per-rung columns as
    JSON text), after checking that it carries a trend stamp for the study of its folder, that
    every rung it was computed from is committed beside it and passes :func:`verified_rung`
    with the content the stamp records, that no committed rung is missing from it, and that its
    content is unedited.  Anything else is an :class:`EvidenceError`."""
    path = Path(path)
    folder = path.parent
    study = folder.name
    hint = (
        f"restore it (`git checkout -- {path}`) or write it again from the committed rungs "
        f"(`sigprop ladder trend {study}`)"
    )
    stamp = _stamp(path, hint, "missing")
    if stamp.get("kind") != "trend" or stamp.get("study") != study:
        raise EvidenceError(
            f"{path}: stamped as {stamp.get('kind')!r} of study "
            f"{stamp.get('study')!r}, not the trend of study {study!r} its folder "
            f"names: {hint}"
        )
    rungs = stamp.get("rungs")
    if not isinstance(rungs, dict) or not rungs:
        raise EvidenceError(f"{path}: its stamp names no rungs: {hint}")
    for scale, content in rungs.items():
        _, prov = verified_rung(folder / scale)
        if prov["claims_content"] != content:
            raise EvidenceError(
                f"{path}: computed from a {scale} rung of content {content}, but "
                f"{folder / scale}/claims.parquet is {prov['claims_content']}: "
                f"{hint}"
            )
    extra = sorted(
        d.name for d in folder.iterdir() if (d / "claims.parquet").exists() and d.name not in rungs
    )
    if extra:
        raise EvidenceError(
            f"{path}: computed from rungs {list(rungs)}, without the committed "
            f"rung(s) {extra}: {hint}"
        )
    return tables.read(path, hint=hint)


def read_committed(
    folder: str | Path,
    regime: dict | None = None,
    depends_on=None,
    tolerance_sources=None,
    corroborations=None,
) -> tuple[pd.DataFrame, dict]:
    """A committed paper-scale study (``docs/evidence/paper-scale/<study>/``), checked once
    (:func:`verified_paper_scale`): its claims read at paper scale, and its provenance.  Columns
    added to the claims table since it was committed get their defaults (``margin``, ``se``,
    ``false_pass``: NaN; ``tolerance_source``: the study file's declaration), the claims the
    study file declares corroborations made summary rows, and every row's
    ``regime`` is the study file's paper-scale ``regime`` along the axes its claim
    ``depends_on``, its ``reading`` computed from them (:mod:`sigprop.claims.reading`), so that
    it reads as the declaration says today without a rerun (the measured values and verdicts
    are the committed ones)."""
    from . import reading

    df, prov = verified_paper_scale(folder)
    for c in ("margin", "se", "false_pass"):
        if c not in df:
            df[c] = float("nan")
    df = reading.apply(
        df, "paper", regime, depends_on, tolerance_sources, corroborations, declared_first=True
    )
    return df[tables.CLAIM_COLUMNS], prov


def read_claims(
    path: str | Path,
    regime: dict | None = None,
    depends_on=None,
    tolerance_sources=None,
    corroborations=None,
) -> pd.DataFrame:
    """The claims of :func:`read_committed` for the study of ``<study>/claims.parquet``."""
    return read_committed(Path(path).parent, regime, depends_on, tolerance_sources, corroborations)[
        0
    ]


def declared_regime(study_cfg: dict | None) -> tuple[dict, list, list, list]:
    """A study file's paper-scale regime, the axes its claims depend on, the sources of their
    tolerances and its declared corroborations (each in its order)."""
    from .reading import pairs, pairs_of

    cfg = study_cfg or {}
    return (
        dict(((cfg.get("scales") or {}).get("paper") or {}).get("regime") or {}),
        pairs(cfg.get("depends_on")),
        pairs_of(cfg.get("tolerance_sources")),
        pairs_of(cfg.get("corroborations")),
    )
