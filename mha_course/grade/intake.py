"""Find a class's submissions: nbgrader's ``submitted/`` layout, a flat or LMS folder, a zip of any of these.

:func:`discover` maps every student to the one notebook file graded as theirs, with the notes a
person should read. Every path is resolved inside the submissions: a symbolic link out of them is
not followed, and a folder or file that links to a classmate's submission is not graded as its
own (the classmate's notebook is graded once, for its owner; the link is flagged for review, naming
both). Student ids are safe for file names and never take another's: a name changed to make it
safe gets a suffix of its own. A zip is unpacked as a stream, with limits (:func:`_unzip`).
"""
from __future__ import annotations

import hashlib
import os
import re
import zipfile
from pathlib import Path

from ..notebook import MAX_BYTES

#: File names of an LMS download (Canvas's): ``<student>_[LATE_]<lms id>_<submission id>_<file>[-<n>].ipynb``.
LMS_PATTERN = r"(?P<student>[A-Za-z0-9]+)_(?P<late>LATE_)?(?P<lms_id>\d+)_(?P<submission>\d+)_(?P<file>.+?)(?:-(?P<copy>\d+))?\.ipynb"
#: A zip is not unpacked past this many bytes in all (a class of 60 notebooks is a few MiB; a zip bomb stops
#: here, well below a grader's disk, with no byte written past it), nor past this many members.
MAX_ZIP_BYTES, MAX_ZIP_MEMBERS = 256 * 1024**2, 10_000


class IntakeError(ValueError):
    """The submissions cannot be graded as given (nothing written yet)."""


def sha256_of(path):
    """The SHA-256 of the file at ``path`` (of no bytes when there is no such regular file), read in chunks."""
    digest = hashlib.sha256()
    if path and os.path.isfile(path) and not os.path.islink(path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def discover(source, assignment, scratch, lms_pattern=LMS_PATTERN):
    """``({student: (path, notes, extra)}, skipped)`` from a submitted/-style folder, a flat or LMS folder, a zip.

    ``path`` is the real file graded as the student's (``""``: none, graded as the blank release);
    ``notes`` are ``[severity, text]`` flags for the report; ``extra`` holds what a result keeps
    (``raw_name``, ``lms_id``, ``source``). ``skipped`` lists, by raw name, the entries that are
    nobody's submission (hidden entries, other files).
    """
    archive = Path(source) if Path(source).suffix == ".zip" else None
    root = (_unzip(archive, assignment, scratch) if archive else Path(source)).resolve()
    found, skipped, raw, linked = {}, [], {}, set()
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.suffix == ".ipynb"):
            skipped.append(entry.name)
            continue
        name, given, notes, extra = _entry(entry, assignment, lms_pattern)
        path, notes = _resolved(given, notes, root)
        student, base = _student(name), _safe(name)
        if student in found and extra.get("lms_id") and found[student][2].get("lms_id") == extra["lms_id"]:
            keep = max(found[student][0], path, key=lambda p: _copy_number(p, lms_pattern))
            notes.append(["info", f"several files from the LMS: graded {Path(keep).name!r}"])
            found[student] = (keep, found[student][1] + notes, extra)
            continue
        linked.discard(student)
        linked.update([student] if path and path != given else [])
        raw.setdefault(base, []).append(entry.name)
        shown = f"{archive.name}:{Path(path).relative_to(root)}" if archive and path else path
        found[student] = (path, notes, {**extra, "raw_name": entry.name, "source": shown})
    return _aliases(_collisions(found, raw), linked, root), skipped


def _resolved(given, notes, root):
    """``(real path, notes)``: ``given`` with every link resolved, or ``""`` when that leads out of ``root``."""
    if not given:
        return "", notes
    real = Path(given).resolve()
    if not real.is_relative_to(root):
        return "", [["review", f"{Path(given).name!r} is a symbolic link out of the submissions: not followed"]]
    return str(real), notes


def _aliases(found, linked, root):
    """A file that several students' paths lead to is graded once, for the one whose path holds no link;
    every other is flagged for review, naming both, and graded as the blank release."""
    by_file = {}
    for student, (path, _, _) in found.items():
        if path:
            by_file.setdefault(path, []).append(student)
    for path, students in by_file.items():
        owners = [s for s in students if s not in linked]
        owner = owners[0] if len(owners) == 1 else None
        where = Path(path).relative_to(root).as_posix()
        for student in students if len(students) > 1 else ():
            others = ", ".join(s for s in students if s != student)
            if student == owner:
                found[student][1].append(["info", f"the submission of {others} links to this one ({where}): "
                                                  "graded once, as this student's"])
                continue
            named = owner or others
            text = (f"{student}'s submission is a link to {named}'s ({where}), not a notebook of its own: not "
                    f"graded as {student}'s; review both {student} and {named}")
            found[student] = ("", [*found[student][1], ["review", text]], found[student][2])
    return found


def _collisions(found, raw):
    """Every submission whose safe name another one shares is named in the notes of both."""
    for names in raw.values():
        if len(names) > 1:
            text = f"names that are the same once made safe: {', '.join(repr(n) for n in names)}"
            for other in [s for s, (_, _, extra) in found.items() if extra.get("raw_name") in names]:
                found[other][1].append(["info", text])
    return found


def _copy_number(path, lms_pattern):
    match = re.fullmatch(lms_pattern, Path(path).name)
    return int(match["copy"]) if match and match.groupdict().get("copy") else 0


def _entry(entry, assignment, lms_pattern):
    """``(name, path, notes, extra)`` of one student's folder or notebook."""
    if not entry.is_dir():
        match = re.fullmatch(lms_pattern, entry.name)
        if match:
            extra = {"lms_id": match.groupdict().get("lms_id") or ""}
            notes = [["info", "handed in late (LMS)"]] if match.groupdict().get("late") else []
            return match["student"], str(entry), notes, extra
        return entry.stem.removesuffix(f"_{assignment}"), str(entry), [], {}
    folder = entry / assignment if (entry / assignment).is_dir() else entry
    files, wanted = sorted(folder.glob("*.ipynb")), folder / f"{assignment}.ipynb"
    if wanted in files:
        return entry.name, str(wanted), [], {}
    if files:
        return entry.name, str(files[0]), [["info", f"file named {files[0].name!r}, not {assignment}.ipynb"]], {}
    others = ", ".join(repr(p.name) for p in sorted(folder.iterdir())[:5])
    return entry.name, "", [["review", f"no notebook in {folder.name!r}/" + (f" (found: {others})" if others else "")]], {}


def _unzip(archive_path, assignment, scratch):
    """Extract a zip of submissions; return its root.

    No absolute paths, no ``..``, at most :data:`MAX_ZIP_MEMBERS` members; each member is read
    as a stream and cut at :data:`~mha_course.notebook.MAX_BYTES` (the sizes a zip declares are not
    trusted), and the whole stops at :data:`MAX_ZIP_BYTES`.
    """
    target, total = Path(scratch) / "unzipped", 0
    with zipfile.ZipFile(archive_path) as archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise IntakeError(f"{archive_path.name} holds {len(members)} files; at most {MAX_ZIP_MEMBERS}")
        for member in members:
            name = member.filename
            if name.startswith("/") or ".." in Path(name).parts or member.is_dir():
                continue
            written = _extract(archive, member, target / name, MAX_ZIP_BYTES - total)
            if written is None:
                raise IntakeError(f"{archive_path.name} unpacks to more than {MAX_ZIP_BYTES // 2**20} MiB: refused")
            total += written
    target.mkdir(parents=True, exist_ok=True)
    roots = [p for p in target.iterdir() if p.is_dir() and not p.name.startswith(".")]
    single = len(roots) == 1 and not (roots[0] / assignment).is_dir() and not list(target.glob("*.ipynb"))
    return roots[0] if single else target


def _extract(archive, member, path, room):
    """Copy one member to ``path`` up to ``MAX_BYTES`` (past it: ``<path>.too-large`` instead); bytes written.

    ``None`` (the member removed) when it would write more than ``room`` bytes: the zip's cap is reached.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with archive.open(member) as src, open(path, "wb") as dst:
        while chunk := src.read(1 << 20):
            written += len(chunk)
            if written > min(MAX_BYTES, room):
                break
            dst.write(chunk)
    if written > room and room < MAX_BYTES:
        path.unlink()
        return None
    if written > MAX_BYTES:
        path.unlink()
        Path(f"{path}.too-large").write_text(f"more than {MAX_BYTES} bytes\n")
    return min(written, MAX_BYTES)


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64].lstrip(".") or "unnamed"


def _student(name):
    """A student id safe for file names; a name changed to make it so gets a suffix of its own."""
    safe = _safe(name)
    if safe == name:
        return safe
    return f"{safe[:55]}-{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"
