"""safegrade's static scan: no honest answer is flagged, every way of reaching the grader's world is."""
from __future__ import annotations

import pytest

from grading_support import read, submission
from mha_course.course import ASSIGNMENTS
from mha_course.safegrade import setup_source
from mha_course.trusted.structure import protected_names, rebuild, scan

PROTECTED = {"numpy", "mha_kit", "math", "np", "mk", "expect_int", "expect_close"}


def _answers(nb):
    return [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_honest_answers_and_the_release_are_not_flagged(assignment):
    protected = protected_names(setup_source(assignment))
    for source in _answers(read("solutions", assignment)) + _answers(read("exercises", assignment)):
        assert scan(source, protected) == [], source


@pytest.mark.parametrize("source", ["import numpy as np", "import mha_kit as mk", "out = np.zeros(3)\nout[0] = 1",
                                    "cache = mk.KVCache(1, 2, 3)\ncache.append(k, v)", "rows = []\nrows.append(1)",
                                    "for _ in range(3):\n    pass", "/f x", "from numpy import isclose"])
def test_ordinary_code_is_not_flagged(source):
    assert scan(source, PROTECTED) == []


@pytest.mark.parametrize("source, reason", [
    ("import numpy as np\nnp.isclose = lambda *a, **k: True", "assigns into np"),
    ("np.testing.assert_allclose = print", "assigns into np"),
    ("del mk.split_heads", "assigns into mk"),
    ("expect_int = lambda *a, **k: None", "rebinds expect_int"),
    ("def f():\n    global np\n    np = None", "rebinds np (global)"),
    ("import builtins\nbuiltins.abs = round", "imports builtins"),
    ("from os import _exit", "imports from os"),
    ("import importlib", "imports importlib"),
    ("class Yes(int):\n    pass", "class Yes subclasses int"),
    ("class A(np.ndarray):\n    pass", "class A subclasses ndarray"),
    ("class B:\n    def __eq__(self, other):\n        return True", "class B defines __eq__"),
    ("class C(metaclass=Meta):\n    pass", "class C has a metaclass"),
    ("getattr(np, 'is' + 'close')", "uses getattr"),
    ("vars(np)['isclose'] = max", "uses vars"),
    ("exec('x = 1')", "uses exec"),
    ("open('/etc/passwd').read()", "uses open"),
    ("get_ipython().run_cell('1')", "uses get_ipython"),
    ("f = (lambda: 0).__globals__", "reaches into .__globals__"),
    ("object.__subclasses__()", "reaches into .__subclasses__"),
    ("np.testing.sys.modules['numpy']", "reaches into .sys"),
    ("mk.attention.np.ctypeslib", "reaches into .ctypeslib"),
    ("!cat /etc/passwd", "uses get_ipython"),
    ("    %time x = 1", "uses get_ipython"),
    ("x = !ls", "uses get_ipython"),  # IPython syntax that ast alone cannot read
    ("_ip = quit._ip\n_ip.events.register('post_run_cell', f)", "uses quit"),
    ("_ip.showtraceback = f", "reaches into .showtraceback"),
    ("source = In[-1]", "uses In"),  # the running cell's text, hidden tests included
    ("source = _i3", "uses _i3"),
    ("import numpy as _n\n_n.allclose = f", "assigns into _n"),  # an alias is not a way round
    ("from numpy._core import numeric\nnumeric.isclose = f", "imports from numpy._core"),
    ("from mha_kit import attention as _A\n_A.np = None", "assigns into _A"),
    ("obj.attribute = 1", "sets an attribute of obj"),
    ("Yes = type('Yes', (np.ndarray,), {})", "makes a class with type()"),
    ("from mha_kit.cache import os", "imports os from mha_kit.cache"),
    ("from collections import _sys", "imports _sys from collections"),
    ("import functools\nfunctools.update_wrapper(expect_int, f, assigned=('__code__',), updated=())",
     "uses update_wrapper"),  # second review: rewrites a helper's code in place
    ("attrgetter('__globals__')(expect_int)", "uses attrgetter"),
    ("get(mk, 'cache.os')", "names 'cache.os' in a string"),
    ("f(expect_int, '__code__')", "names '__code__' in a string"),
    ("Base = np.ndarray\nclass Anything(Base):\n    __module__ = 'numpy'", "class Anything subclasses Base"),
    ("class Quiet:\n    __module__ = 'numpy'", "class Quiet defines __module__"),
    ("class Same:\n    __eq__ = lambda self, other: True", "class Same defines __eq__"),
    ("for np.swapaxes in [f]:\n    pass", "assigns into np"),
    ("with f() as mk.split_heads:\n    pass", "assigns into mk"),
    ("(np := 3)", "rebinds np"),
    ("for np in range(3):\n    pass", "rebinds np"),
    ("def expect_close(*args):\n    pass", "rebinds expect_close"),
    ("import math as np", "rebinds np"),
    ("def f(:", "cannot be read as Python (SyntaxError)"),
    ("mk.PRESETS.update(other)", "changes mk in place (.update)"),
    ("from mha_kit import DTYPE_BITS\nDTYPE_BITS.clear()", "changes DTYPE_BITS in place (.clear)"),
])
def test_reaching_the_grader_is_flagged(source, reason):
    assert reason in scan(source, PROTECTED)


def test_the_forged_guard_output_attack_is_flagged_for_review():
    """The attack the in-kernel guard cannot see: rewrite its output so the replaced ids look original."""
    forge = ("import sys\n_real = id(np.isclose)\nnp.isclose = lambda *a, **k: True\n_write = sys.stdout.write\n"
             "sys.stdout.write = lambda text: _write(text.replace(str(id(np.isclose)), str(_real)))\n")
    nb = submission("01_shapes", {})
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer")
    answer.source = forge + answer.source
    _, flags = rebuild(nb, read("exercises", "01_shapes"), PROTECTED)
    assert ("review", "suspicious code in head_dim_answer: imports sys; assigns into np; assigns into sys; "
                      "reaches into .stdout") in flags


def test_reordered_cells_run_in_the_source_order_and_are_flagged():
    nb = submission("01_shapes", {})
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")]
    first, last = nb.cells.index(graded[0]), nb.cells.index(graded[-1])
    nb.cells[first], nb.cells[last] = nb.cells[last], nb.cells[first]
    release = read("exercises", "01_shapes")
    rebuilt, flags = rebuild(nb, release, PROTECTED)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in rebuilt.cells]
    assert ids == [c.metadata.get("nbgrader", {}).get("grade_id") for c in release.cells]
    assert ("review", "cells reordered (graded in the source's order)") in flags


def test_cells_of_the_wrong_types_are_read_as_nothing_and_flagged():
    nb = submission("01_shapes", {})
    answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    nb.cells[0]["metadata"] = 5
    nb.cells[1]["metadata"] = {"nbgrader": "x"}
    answers[0]["metadata"]["nbgrader"]["grade_id"] = ["a", "list"]
    answers[1]["source"] = 42
    nb.cells.append(7)
    rebuilt, flags = rebuild(nb, read("exercises", "01_shapes"), PROTECTED)
    assert [c.source for c in rebuilt.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "head_dim_answer"]
    assert any(text.startswith("cells deleted (restored from the source)") for _, text in flags), flags
