"""Rebuild a submitted notebook on the instructor's release: :func:`rebuild` and :class:`RebuildOnRelease`.

:func:`rebuild` never trusts the file's structure: the notebook that gets executed is the
instructor's release with the learner's *answer* cells put in by ``grade_id`` (and the learner's
own extra code cells kept where they were: after the release cell they followed, found by ``grade_id``
or, for a cell without nbgrader metadata such as the import cell, by its source). Test cells, their metadata and checksums
always come from the release, so editing, deleting, reordering or forging them earns nothing; each
such change is still reported, with a flag for manual review. :class:`RebuildOnRelease` does this
inside nbgrader's ``autograde`` (its first sanitizing step, set in ``nbgrader_config.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..notebook import add_flags, grade_id, meta
from .api import coursedir_of

#: An answer cell larger than this is not graded (an answer is a few hundred bytes).
MAX_CELL_BYTES = 1024**2


def rebuild(submitted, release):
    """``(notebook, flags)``: the release with the learner's answers in; ``flags`` lists what changed.

    ``submitted`` may be ``None`` (an unreadable file): the release is graded as it is (no answers).
    """
    release_ids = [meta(c).get("grade_id") for c in release.cells if meta(c).get("grade_id")]
    answers, extras, seen, flags = _learner_code(submitted, release, release_ids)
    if submitted is not None:
        flags += _compare(submitted, release, release_ids, seen)
    return _assemble(release, answers, extras), sorted(set(flags), key=flags.index)


def _source(cell):
    """A cell's source as text, whatever the file holds (a list of lines, or something else)."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else ""


def _anchors(release):
    """``{key: index of a release cell}``: what finds a release cell in a submission, by ``grade_id`` or,
    for a cell without nbgrader metadata (the import cell, the prose), by its source."""
    anchors = {}
    for index, cell in enumerate(release.cells):
        key = ("id", meta(cell).get("grade_id")) if meta(cell).get("grade_id") else ("source", _source(cell))
        anchors.setdefault(key, index)
    return anchors


def _learner_code(submitted, release, release_ids):
    """``(answers, extras, seen, flags)``: answer sources by ``grade_id``, the learner's own code cells by
    the index of the release cell they follow (``None``: before every one), and every ``grade_id`` met."""
    answers, extras, seen, flags, owner = {}, {}, [], [], None
    release_code = {c.source for c in release.cells if c.cell_type == "code" and not meta(c)}
    anchors = _anchors(release)
    for cell in (submitted.cells if submitted is not None else []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        cell_id, source = grade_id(cell), _source(cell)
        seen += [cell_id] if cell_id else []
        key = ("id", cell_id) if cell_id else ("source", source) if not meta(cell) else None
        if cell_id in release_ids and _release_meta(release, cell_id).get("solution"):
            if len(source) > MAX_CELL_BYTES:
                flags.append(("review", f"answer cell {cell_id} holds {len(source)} characters (at most "
                                        f"{MAX_CELL_BYTES}): not graded"))
                continue
            if cell_id in answers:
                flags.append(("review", f"answer cell {cell_id} appears twice (first one graded)"))
                continue
            answers[cell_id] = source
        elif not meta(cell) and cell.get("cell_type") == "code" and source.strip() and source not in release_code:
            extras.setdefault(owner, []).append(source)
            continue
        owner = anchors.get(key, owner)  # the learner's next own cells keep their place after this one
    return answers, extras, seen, flags


def _assemble(release, answers, extras):
    """The release's cells with the answers put in; the learner's own cells after the release cell they followed."""
    cells = [nbformat.v4.new_code_cell(source) for source in extras.get(None, [])]
    for index, cell in enumerate(release.cells):
        cell = nbformat.from_dict(json.loads(json.dumps(cell)))
        cell_id = meta(cell).get("grade_id")
        if cell_id in answers:
            cell.source = answers[cell_id]
        cells += [cell, *(nbformat.v4.new_code_cell(s) for s in extras.get(index, []))]
    nb = nbformat.from_dict(json.loads(json.dumps(release)))
    nb.cells = cells
    return nb


def _release_meta(release, cell_id):
    return next(meta(c) for c in release.cells if meta(c).get("grade_id") == cell_id)


def _compare(submitted, release, release_ids, seen):
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
    by_id = {grade_id(c): c for c in submitted.cells if grade_id(c)}
    for cell_id in release_ids:
        ours, theirs = _release_meta(release, cell_id), by_id.get(cell_id)
        if theirs is None:
            continue
        src = next(c for c in release.cells if meta(c).get("grade_id") == cell_id)
        if {k: v for k, v in meta(theirs).items() if k != "checksum"} != {k: v for k, v in ours.items() if k != "checksum"}:
            flags.append(("review", f"metadata of {cell_id} changed (restored from the source)"))
        elif ours.get("locked") and theirs.get("source", "") != src.source:
            flags.append(("review", f"locked cell {cell_id} edited (restored from the source)"))
    return flags


class RebuildOnRelease(Preprocessor):
    """nbgrader sanitizing step: the notebook becomes the course's release with the learner's answers in.

    The release is ``<release_directory>/<assignment>/<notebook>.ipynb`` of the course being graded;
    what the rebuild changed is recorded as flags (see :func:`mha_course.notebook.add_flags`).
    """

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        info, coursedir = resources["nbgrader"], coursedir_of(self)
        release_path = Path(coursedir.format_path(coursedir.release_directory, ".", info["assignment"]))
        release_path = release_path / f"{info['notebook']}.ipynb"
        if not release_path.is_file():
            raise ValueError(f"no release at {release_path}: run `nbgrader generate_assignment --force "
                             f"{info['assignment']}` first")
        rebuilt, flags = rebuild(nb, nbformat.read(release_path, as_version=4))
        add_flags(rebuilt, flags)
        return rebuilt, resources
