"""tests/assertion_cache.py: the caches it writes before `make test`'s workers start are the ones pytest reads."""
import os
import subprocess
import sys

import assertion_cache

SAMPLE = "def test_values():\n    a = 41\n    assert a + 1 == 43\n"


def _pytest(module):
    """pytest on ``module`` in a process that writes bytecode caches (so it would replace one it could not use)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", module.name],
                          cwd=module.parent, env=env, capture_output=True, text=True, timeout=120)


def test_pytest_reads_the_cache_written_before_it(tmp_path):
    """The cache written for a module is current (a second call writes nothing), pytest runs the module from it
    without writing its own (the file is the same one), and its failing assert shows the values: the asserts in
    the cache are rewritten."""
    module = tmp_path / "test_sample.py"
    module.write_text(SAMPLE)
    assert assertion_cache.write_cache(module) is True
    (cache,) = (tmp_path / "__pycache__").glob("test_sample.*-pytest-*.pyc")
    before = cache.stat()
    assert assertion_cache.write_cache(module) is False
    result = _pytest(module)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "assert (41 + 1) == 43" in result.stdout, result.stdout
    after = cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert list((tmp_path / "__pycache__").glob("test_sample.*")) == [cache]


def test_a_stale_cache_is_written_again(tmp_path):
    """A module edited after its cache was written gets a new one (the cache holds the source's hash)."""
    module = tmp_path / "test_sample.py"
    module.write_text(SAMPLE)
    assert assertion_cache.write_cache(module) is True
    module.write_text(SAMPLE.replace("43", "44"))
    assert assertion_cache.write_cache(module) is True
    assert "assert (41 + 1) == 44" in _pytest(module).stdout


def test_every_test_module_and_the_conftest_are_cached():
    """The modules it writes are pytest's test modules (tests/test_*.py) and tests/conftest.py."""
    names = {path.name for path in assertion_cache.modules()}
    assert "conftest.py" in names and "test_assertion_cache.py" in names
    assert all(name == "conftest.py" or (name.startswith("test_") and name.endswith(".py")) for name in names)
