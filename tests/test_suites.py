"""Every test module is in exactly one of `make check`'s and `make test`'s lists (tests/suites.py)."""

from booktoc import REPO_ROOT
from suites import FULL, LONGEST_FIRST, UNIT


def test_every_test_module_is_in_one_suite():
    modules = {path.name for path in (REPO_ROOT / "tests").glob("test_*.py")}
    assert not UNIT & FULL, f"in both UNIT and FULL of tests/suites.py: {sorted(UNIT & FULL)}"
    unplaced = sorted(modules - UNIT - FULL)
    assert not unplaced, (f"put {unplaced} in UNIT (make check: no notebook run, no grading, no kernel, "
                          "no site, no browser) or FULL (make test only) in tests/suites.py")
    gone = sorted((UNIT | FULL) - modules)
    assert not gone, f"tests/suites.py lists modules that no longer exist: {gone}"


def test_the_longest_first_list_names_files_of_make_test():
    """Each entry is a test module of FULL or a chapter, once: a renamed file is caught, not silently unordered."""
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    for name in LONGEST_FIRST:
        assert (REPO_ROOT / name).is_file(), f"tests/suites.py LONGEST_FIRST names {name}, which does not exist"
        assert name.startswith("book/") or name.removeprefix("tests/") in FULL, name
