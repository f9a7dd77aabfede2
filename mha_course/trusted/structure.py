"""Read a submitted notebook without running it, and rebuild it on the instructor's cells.

:func:`rebuild` never trusts the file's structure: the notebook that gets executed is the
instructor's release with the learner's *answer* cells put in by ``grade_id`` (and the learner's
own extra code cells kept after the answer they follow). Test cells, their metadata and checksums
always come from the source, so editing, deleting, reordering or forging them earns nothing; each
such change is still reported, with a flag for manual review. :class:`RebuildOnRelease` does this
inside nbgrader's ``autograde`` (its first sanitizing step, set in ``nbgrader_config.py``).
"""
from __future__ import annotations

import hashlib
import json
import os

from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

#: A notebook larger than this is not read (exercise notebooks are well under 1 MiB).
MAX_BYTES = 20 * 1024**2
#: An answer cell larger than this is not graded (an answer is a few hundred bytes).
MAX_CELL_BYTES = 1024**2

def _meta(cell):
    """The cell's nbgrader metadata, ``{}`` when the file holds anything but a dict there."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbgrader if isinstance(nbgrader, dict) else {}


def _grade_id(cell):
    grade_id = _meta(cell).get("grade_id")
    return grade_id if isinstance(grade_id, str) else None


def sha256_of(path):
    """The SHA-256 of the file at ``path`` (of no bytes when there is no such regular file), read in chunks."""
    digest = hashlib.sha256()
    if path and os.path.isfile(path) and not os.path.islink(path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def load(path):
    """``(notebook, problem)``: the parsed notebook, or ``None`` and why it could not be read."""
    try:
        if not path:
            return None, "no file"
        if os.path.islink(path):
            return None, "a symbolic link, not a file: not followed"
        if os.path.getsize(path) > MAX_BYTES:
            return None, f"file too large ({os.path.getsize(path)} bytes; at most {MAX_BYTES})"
        with open(path, "rb") as f:
            raw = f.read()
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
    except RecursionError:
        return None, "not a notebook: nested too deep"
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, ValueError, KeyError, TypeError) as error:
        return None, f"not a notebook: {' '.join(str(error).split())[:200]}"
    if not isinstance(nb.get("cells"), list):
        return None, "not a notebook: no cells"
    return nb, None


def rebuild(submitted, release):
    """``(notebook, flags)``: the release with the learner's answers in; ``flags`` lists what changed.

    ``submitted`` may be ``None`` (an unreadable file): the release is graded as it is (no answers).
    """
    release_ids = [_meta(c).get("grade_id") for c in release.cells if _meta(c).get("grade_id")]
    answers, extras, seen, flags = _learner_code(submitted, release, release_ids)
    if submitted is not None:
        flags += _compare(submitted, release, release_ids, seen, answers)
    return _assemble(release, answers, extras), sorted(set(flags), key=flags.index)


def _source(cell):
    """A cell's source as text, whatever the file holds (a list of lines, or something else)."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else ""


def _learner_code(submitted, release, release_ids):
    """``(answers, extras, seen, flags)``: answer sources by ``grade_id``, the learner's own code
    cells by the answer they follow (``None``: before the first), and every ``grade_id`` met."""
    answers, extras, seen, flags, owner = {}, {}, [], [], None
    release_code = {c.source for c in release.cells if c.cell_type == "code" and not _meta(c)}
    for cell in (submitted.cells if submitted is not None else []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        meta, grade_id, source = _meta(cell), _grade_id(cell), _source(cell)
        seen += [grade_id] if grade_id else []
        if grade_id in release_ids and _release_meta(release, grade_id).get("solution"):
            if len(source) > MAX_CELL_BYTES:
                flags.append(("review", f"answer cell {grade_id} holds {len(source)} characters (at most "
                                        f"{MAX_CELL_BYTES}): not graded"))
                continue
            if grade_id in answers:
                flags.append(("review", f"answer cell {grade_id} appears twice (first one graded)"))
                continue
            answers[grade_id], owner = source, grade_id
        elif not meta and cell.get("cell_type") == "code" and source.strip() and source not in release_code:
            extras.setdefault(owner, []).append(source)
    return answers, extras, seen, flags


def _assemble(release, answers, extras):
    """The release's cells with the answers put in, each followed by the learner's own cells."""
    cells = [nbformat.v4.new_code_cell(source) for source in extras.get(None, [])]
    for cell in release.cells:
        cell = nbformat.from_dict(json.loads(json.dumps(cell)))
        grade_id = _meta(cell).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
            cells += [cell, *(nbformat.v4.new_code_cell(s) for s in extras.get(grade_id, []))]
        else:
            cells.append(cell)
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    nb.cells = cells
    return nb


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
    by_id = {_grade_id(c): c for c in submitted.cells if _grade_id(c)}
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


class RebuildOnRelease(Preprocessor):
    """nbgrader sanitizing step: the notebook becomes the course's release with the learner's answers in.

    The release is ``<release_directory>/<assignment>/<notebook>.ipynb`` of the course being graded;
    what the rebuild changed is recorded as flags (see :func:`mha_course.trusted.execute.add_flags`).
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        from .execute import add_flags

        info = resources["nbgrader"]
        release_path = Path(_coursedir(self).format_path(_coursedir(self).release_directory, ".", info["assignment"]))
        release_path = release_path / f"{info['notebook']}.ipynb"
        if not release_path.is_file():
            raise ValueError(f"no release at {release_path}: run `nbgrader generate_assignment --force "
                             f"{info['assignment']}` first")
        rebuilt, flags = rebuild(nb, nbformat.read(release_path, as_version=4))
        add_flags(rebuilt, flags)
        return rebuilt, resources


def _coursedir(configurable):
    """The ``CourseDirectory`` of the nbgrader converter running ``configurable``."""
    from nbgrader.coursedir import CourseDirectory

    parent = configurable
    while parent is not None:
        if isinstance(getattr(parent, "coursedir", None), CourseDirectory):
            return parent.coursedir
        parent = getattr(parent, "parent", None)
    return CourseDirectory(config=configurable.config)
