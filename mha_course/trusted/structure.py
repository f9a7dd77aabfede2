"""Read a submitted notebook without running it, and rebuild it on the instructor's cells.

:func:`rebuild` never trusts the file's structure: the notebook that gets executed is the
instructor's release with the learner's *answer* cells put in by ``grade_id`` (and the learner's
own extra code cells kept after the answer they follow). Test cells, their metadata and checksums
always come from the source, so editing, deleting, reordering or forging them earns nothing; each
such change is still reported, with a flag for manual review.
"""
from __future__ import annotations

import json
import re

import nbformat

#: Patterns in an answer that have no business in these exercises: each one flags the submission.
SUSPICIOUS = {
    r"\b__builtins__\b|\bimport\s+builtins\b|\bfrom\s+builtins\b": "touches builtins",
    r"\bsys\.modules\b": "touches sys.modules",
    r"\bctypes\b": "uses ctypes",
    r"\bgc\.": "uses the garbage collector",
    r"\b(exec|eval|compile)\s*\(": "runs code from strings",
    r"\bsetattr\s*\(|\bdelattr\s*\(": "sets attributes dynamically",
    r"\b(np|numpy|mk|mha_kit)\.[\w.]+\s*=[^=]": "assigns into numpy or mha_kit",
    r"\bdef\s+__(eq|ne|bool|index|int|float|instancecheck)__": "overrides comparison or conversion",
    r"\bclass\s+\w+\s*\(\s*(int|float|str|tuple|list|dict|np\.ndarray|numpy\.ndarray)\b": "subclasses a value type",
    r"\bos\._exit\b|\bsignal\b|\bsubprocess\b|\bsocket\b|\bos\.fork\b|\bmultiprocessing\b": "processes, signals or network",
    r"\bget_ipython\b|\bIPython\b|\bsys\.(stdout|excepthook|displayhook)\b": "touches the kernel's machinery",
}


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def load(path):
    """``(notebook, problem)``: the parsed notebook, or ``None`` and why it could not be read."""
    try:
        raw = open(path, "rb").read()
    except OSError as error:
        return None, f"unreadable file: {error}"
    if not raw.strip():
        return None, "empty file"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"not UTF-8: {error}"
    try:
        nb = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, ValueError, KeyError, TypeError) as error:
        return None, f"not a notebook: {str(error)[:200]}"
    if not isinstance(nb.get("cells"), list):
        return None, "not a notebook: no cells"
    return nb, None


def rebuild(submitted, release):
    """``(notebook, flags)``: the release with the learner's answers in; ``flags`` lists what changed.

    ``submitted`` may be ``None`` (an unreadable file): the release is graded as it is (no answers).
    """
    flags = []
    release_ids = [_meta(c).get("grade_id") for c in release.cells if _meta(c).get("grade_id")]
    answers, extras, seen = {}, {}, []
    release_code = {c.source for c in release.cells if c.cell_type == "code" and not _meta(c)}
    owner = None
    for cell in (submitted.cells if submitted is not None else []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        meta, grade_id = _meta(cell), _meta(cell).get("grade_id")
        if grade_id:
            seen.append(grade_id)
        if grade_id in release_ids and _release_meta(release, grade_id).get("solution"):
            if grade_id in answers:
                flags.append(("review", f"answer cell {grade_id} appears twice (first one graded)"))
                continue
            answers[grade_id] = cell.get("source", "")
            owner = grade_id
        elif (not meta and cell.get("cell_type") == "code" and cell.get("source", "").strip()
              and cell.get("source") not in release_code):
            extras.setdefault(owner, []).append(cell.get("source", ""))
    if submitted is not None:
        flags += _compare(submitted, release, release_ids, seen, answers)
    cells = []
    for key, source in ((None, s) for s in extras.get(None, [])):
        cells.append(nbformat.v4.new_code_cell(source))
    for cell in release.cells:
        cell = nbformat.from_dict(json.loads(json.dumps(cell)))
        grade_id = _meta(cell).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        cells.append(cell)
        cells += [nbformat.v4.new_code_cell(s) for s in extras.get(grade_id, [])] if grade_id in answers else []
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    nb.cells = cells
    for source in [*answers.values(), *(s for group in extras.values() for s in group)]:
        for pattern, why in SUSPICIOUS.items():
            if re.search(pattern, source):
                flags.append(("review", f"suspicious code ({why})"))
    return nb, sorted(set(flags), key=flags.index)


def _release_meta(release, grade_id):
    return next(_meta(c) for c in release.cells if _meta(c).get("grade_id") == grade_id)


def _compare(submitted, release, release_ids, seen, answers):
    """What the learner changed outside the answer cells (all of it is replaced by the release)."""
    flags = []
    if release_ids and not set(seen) & set(release_ids):
        return [("review", "not this assignment's notebook (none of its cells are there)")]
    missing = [g for g in release_ids if g not in seen]
    if missing:
        flags.append(("review", f"cells deleted (restored from the source): {', '.join(missing)}"))
    foreign = [g for g in seen if g not in release_ids]
    if foreign:
        flags.append(("review", f"cells with unknown grade_ids ignored: {', '.join(foreign[:10])}"))
    kept = [g for g in seen if g in release_ids]
    if kept != [g for g in release_ids if g in kept]:
        flags.append(("review", "cells reordered (graded in the source's order)"))
    by_id = {_meta(c).get("grade_id"): c for c in submitted.cells if isinstance(c, dict) and _meta(c).get("grade_id")}
    for grade_id in release_ids:
        ours, theirs = _release_meta(release, grade_id), by_id.get(grade_id)
        if theirs is None:
            continue
        src = next(c for c in release.cells if _meta(c).get("grade_id") == grade_id)
        if {k: v for k, v in _meta(theirs).items() if k != "checksum"} != {k: v for k, v in ours.items() if k != "checksum"}:
            flags.append(("review", f"metadata of {grade_id} changed (restored from the source)"))
        elif ours.get("locked") and theirs.get("source", "") != src.source:
            flags.append(("review", f"locked cell {grade_id} edited (restored from the source)"))
    return flags
