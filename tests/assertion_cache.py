"""Write pytest's caches of the test modules with their asserts rewritten, before `make test` starts its workers.

pytest rewrites the ``assert`` statements of every test module it imports (so that a failure shows the values) and
caches the result beside the module (``__pycache__/<name>.cpython-311-pytest-<version>.pyc``). In a fresh clone
there is no cache yet, and pytest-xdist's workers collect the whole suite at once: each of the four rewrote all
300 modules itself, 7 of its 13 CPU-seconds of collection (measured on 2 cores, 2026-12-06). This script writes the
caches first, spread over the cores, as pytest would have written them; a module whose cache is already there and
current is left alone. ``tests/test_assertion_cache.py`` shows that pytest then reads the cache written here
instead of rewriting the module again.

It uses pytest's own rewriting functions (``_pytest.assertion.rewrite``: not a public API). Where a pytest release
changes them, the script says so in one line and exits 0: the caches are an optimisation, and pytest writes its
own as before.

    python tests/assertion_cache.py [FILE ...]     (default: tests/test_*.py and tests/conftest.py)
"""
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent


class _Quiet:
    """What pytest's cache writer reports to: nothing (a cache it cannot write is simply not written)."""

    @staticmethod
    def trace(message):
        pass


def write_cache(path):
    """Rewrite the module at ``path`` and write its cache as pytest does; False where a current cache was there."""
    from _pytest.assertion import rewrite

    source = Path(path).resolve()
    pyc = rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(source, pyc) is not None:
        return False
    # config=None: the project sets no enable_assertion_pass_hook, the one setting the rewriting reads
    source_hash, code = rewrite._rewrite_test(source, None)
    if not rewrite.try_makedirs(pyc.parent):
        return False
    return rewrite._write_pyc(_Quiet, code, source_hash, pyc)


def modules():
    """The test modules and the conftest pytest rewrites, the largest first (the pool ends together)."""
    paths = [*TESTS.glob("test_*.py"), TESTS / "conftest.py"]
    return sorted(paths, key=lambda path: path.stat().st_size, reverse=True)


def main(argv):
    paths = [Path(arg) for arg in argv] or modules()
    try:
        with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            written = sum(pool.map(write_cache, paths, chunksize=4))
    except (ImportError, AttributeError, TypeError) as error:
        print(f"assertion_cache: pytest's rewriting changed ({type(error).__name__}: {error}); "
              "pytest writes its own caches")
        return 0
    print(f"assertion_cache: {written} of {len(paths)} test modules rewritten and cached")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
