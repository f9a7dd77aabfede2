"""Similarity flags: answers a class shares, and answers taken from code a learner can read.

After a class is graded (``python -m mha_course.safegrade``), :func:`mark` compares every answer
cell with the same cell of every classmate, and with the code a learner can read: ``mha_kit``'s
source (public by design: the book computes everything with it) and the judge's files the browser
edition packs (``solutions/<assignment>/grading_questions.py``, the judge and the kernel side). The
comparison is the winnowing of copydetect (the MOSS approach, with a hash that is the same in every process): each answer, with
comments and names normalised away (``V`` for every name), becomes a set of k-gram fingerprints;
the release's stub (the signature and docstring every answer starts from) and fingerprints that
more than a quarter of the class share (the plain way to write a short answer) are left out, as
MOSS leaves out code common to many. A pair whose shared fingerprints are at least
:data:`THRESHOLD` of each answer's (of the answer's alone, against readable code) is flagged for
review, naming both students, the cell and the share, in the results, so in ``grades.csv``, the
reports and the gradebook's comment (formgrader). Two byte-identical notebooks (a copy, a hard
link) are always flagged. A flag changes no score: a person decides.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from collections import Counter
from functools import lru_cache
from pathlib import Path

from ..course import BROWSER_SIDE, REPO_ROOT, package_files
from ..notebook import answers
from ..plugins.api import load

#: copydetect's defaults: no match shorter than 25 normalised characters counts, any of 30 is found.
NOISE, GUARANTEE = 25, 30
#: The share of an answer's fingerprints found in the other answer (both ways), or in readable code, that flags it.
THRESHOLD = 0.8
#: An answer with fewer fingerprints than this (after the stub and the class's common code) is too short to judge.
MIN_FINGERPRINTS = 12
#: Text of the flags this pass writes (a rerun replaces them).
MARKERS = ("similar: ", "identical notebook: ")
#: The SHA-256 of no bytes: a submission without a file.
_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def fingerprints(source, boilerplate=()):
    """The set of winnowed fingerprints of Python ``source``, the hashes in ``boilerplate`` left out.

    copydetect's tokenising filter and its winnowing, with a hash of each k-gram that is the same in every
    process: copydetect hashes with Python's ``hash()``, which changes from one run to the next
    (``PYTHONHASHSEED``), and with it which fingerprints winnowing keeps and how many, so a flag near a
    threshold would come and go between two gradings of the same class.
    """
    from copydetect.utils import filter_code, winnow
    import numpy as np

    try:
        filtered, _ = filter_code(source, "answer.py")
    except Exception:  # noqa: BLE001 (pygments reads anything; a failure is no reason to stop a class)
        return frozenset()
    grams = [filtered[i:i + NOISE] for i in range(len(filtered) - NOISE + 1)]
    if not grams:
        return frozenset()
    hashes = np.array([_stable_hash(g) for g in grams], dtype=np.int64)
    selected, _ = winnow(hashes, GUARANTEE - NOISE + 1, remove_duplicates=False)
    return frozenset(int(h) for h in selected) - frozenset(boilerplate)


def _stable_hash(text):
    """A signed 64-bit hash of ``text`` that does not depend on the process (BLAKE2b, 8 bytes)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def readable_files(root=REPO_ROOT):
    """The code a learner can read: ``mha_kit``'s source and what the browser edition packs of the course
    (the judge's questions, and the files of :data:`mha_course.course.BROWSER_SIDE`)."""
    root = Path(root)
    return sorted([*(root / "mha_kit").rglob("*.py"), *(root / "solutions").glob("*/grading_questions.py"),
                   *(root / name for name in package_files(BROWSER_SIDE))])


@lru_cache(maxsize=2)
def readable(root=REPO_ROOT):
    """``{fingerprint: file, relative to root}`` of :func:`readable_files`."""
    table = {}
    for path in readable_files(root):
        for h in fingerprints(path.read_text(encoding="utf-8", errors="replace")):
            table.setdefault(h, path.relative_to(root).as_posix())
    return table


def _answers(out, assignment, result):
    path = Path(out) / "autograded" / result["student"] / f"{assignment}.ipynb"
    nb, _ = load(path) if path.is_file() else (None, None)
    return answers(nb) if nb is not None else {}


def findings(out, assignment, results, release_answers, root=REPO_ROOT):
    """``{student: [flag text]}``: identical notebooks, answers a pair shares, answers found in readable code."""
    found = {r["student"]: [] for r in results}
    by_hash = {}
    for r in results:
        if r.get("file") and r.get("sha256") not in (None, "", _EMPTY):
            by_hash.setdefault(r["sha256"], []).append(r["student"])
    for students in by_hash.values():
        for student in students if len(students) > 1 else ():
            others = ", ".join(s for s in students if s != student)
            found[student].append(f"identical notebook: {student}'s file is byte for byte {others}'s (a copy or a "
                                  f"hard link): review {student} and {others}")
    cells = {r["student"]: _answers(out, assignment, r) for r in results}
    public = readable(root)
    for cell, stub in release_answers.items():
        stub_prints = fingerprints(stub)
        prints = {s: fingerprints(a[cell], stub_prints) for s, a in cells.items() if a.get(cell, "").strip()}
        prints = {s: p for s, p in prints.items() if cell in cells[s] and cells[s][cell] != stub}
        counts = Counter(h for p in prints.values() for h in p)
        common = {h for h, n in counts.items() if n > max(3, len(results) // 4)}
        kept = {s: p - common for s, p in prints.items() if len(p - common) >= MIN_FINGERPRINTS}
        _pairs(cell, kept, found)
        for student, p in prints.items():
            _readable(cell, student, p, public, found)
    return found


def _pairs(cell, kept, found):
    names = sorted(kept)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = len(kept[a] & kept[b])
            score = min(shared / len(kept[a]), shared / len(kept[b]))
            if score >= THRESHOLD:
                for one, other in ((a, b), (b, a)):
                    found[one].append(f"similar: {cell} of {one} and of {other} share {score:.0%} of their code "
                                      f"(copydetect): review {one} and {other}")


def _readable(cell, student, prints, public, found):
    if len(prints) < MIN_FINGERPRINTS:
        return
    hits = [public[h] for h in prints if h in public]
    score = len(hits) / len(prints)
    if score >= THRESHOLD:
        where = Counter(hits).most_common(1)[0][0]
        found[student].append(f"similar: {cell} of {student} is {score:.0%} code a learner can read ({where}, "
                              "copydetect): review it")


def mark(out, assignment, release_answers, root=REPO_ROOT):
    """Put :func:`findings` into every result under ``out/results`` (replacing this pass's earlier flags);
    return the students whose result changed."""
    from .pipeline import Result

    paths = sorted((Path(out) / "results").glob("*.json"))
    results = [json.loads(p.read_text()) for p in paths]
    found, changed = findings(out, assignment, results, release_answers, root), []
    for path, result in zip(paths, results):
        flags = [f for f in result.get("flags", []) if not str(f[1]).startswith(MARKERS)]
        flags += [["review", text] for text in found.get(result["student"], [])]
        if flags == result.get("flags", []):
            continue
        status = Result.from_dict({**result, "flags": flags})
        result.update(flags=flags, status=status.status, review=status.review)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1))
        os.replace(tmp, path)
        changed.append(result["student"])
    return changed


def normalised_lines(source, min_tokens=10):
    """Python ``source`` as its logical lines, each normalised: every name the author chose ``V``, every string
    ``S``, comments and layout gone; keywords, builtins, numpy's and mha_kit's names (``np``, ``mk``), attributes
    (``.shape``, ``.exp``), numbers and operators kept; only lines of at least ``min_tokens`` tokens.

    Two lines that differ only in their names, comments, strings or spacing normalise alike: the leak test of the
    learner edition compares solution lines with the code it ships this way (``tests/test_learner_edition_code.py``).
    """
    import builtins
    import keyword
    import tokenize

    kept = set(dir(builtins)) | {"np", "numpy", "math", "mk", "mha_kit"}
    lines, current, previous = set(), [], None
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NEWLINE:
                if len(current) >= min_tokens:
                    lines.add(" ".join(current))
                current = []
            elif token.type == tokenize.NAME:
                plain = keyword.iskeyword(token.string) or token.string in kept or previous == "."
                current.append(token.string if plain else "V")
            elif token.type == tokenize.STRING or token.type in getattr(tokenize, "FSTRING_TYPES", ()):
                current.append("S")
            elif token.type not in skip:
                current.append(token.string)
            previous = token.string if token.type not in skip else previous
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return lines
