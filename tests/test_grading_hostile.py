"""Answers written against the grader earn nothing; honest answers written any way earn everything.

Graded as the instructor grades: nbgrader's autograde with the judge (``JudgeCells``) and each
assignment's learner edition of ``mha_kit`` in the kernel, all notebooks in one subprocess. A
hostile answer loses exactly the points of the questions it touches, and no more: a question
built on it is graded with a correct one in its place (error carried forward); a result that is
not plain data, or a reference that is not available, is named in the failing cell's error. Honest variants
(helper classes, namedtuples, type hints, prints, figures, ``from mha_kit import plots``,
``math.prod``, custom exceptions, extra cells) score full marks with no error anywhere.
"""
import nbformat
import pytest

import grading_support as gs

MIME = "application/vnd.mha-course.results+json"

ALWAYS_EQUAL = '''class Yes:
    def __eq__(self, other):
        return True

def head_dim(d_model, num_heads):
    return Yes()'''

INT_SUBCLASS = '''class Sneaky(int):
    def __eq__(self, other):
        return True

def head_dim(d_model, num_heads):
    return Sneaky(d_model // num_heads + 1)'''

MASKED = '''def merge_heads(x):
    B, h, n, d_h = x.shape
    return np.ma.masked_array(x.reshape(B, n, h * d_h), mask=True)  # wrong, and every entry hidden'''

SWAP_MID_CELL = '''import builtins

def head_dim(d_model, num_heads):
    saved = np.allclose, np.array_equal, builtins.isinstance, builtins.int
    np.allclose = np.array_equal = lambda *args, **kwargs: True
    builtins.isinstance = lambda *args: True
    builtins.int = float
    try:
        return d_model / num_heads  # a float
    finally:  # restored before the test cell ends
        np.allclose, np.array_equal, builtins.isinstance, builtins.int = saved'''

THREAD = '''import threading, time

def _tamper():
    for _ in range(400):
        np.allclose = np.array_equal = lambda *args, **kwargs: True
        mk.PRESETS = {}
        time.sleep(0.005)

threading.Thread(target=_tamper, daemon=True).start()

def head_dim(d_model, num_heads):
    return d_model / num_heads'''

FINALIZER = '''import gc, weakref

class _Box:
    pass

_box = _Box()
weakref.finalize(_box, lambda: setattr(np, "array_equal", lambda *args, **kwargs: True))

def head_dim(d_model, num_heads):
    global _box
    _box = None
    gc.collect()  # the finalizer runs in the middle of the test
    return d_model / num_heads'''

REPLAY = '''from IPython import get_ipython

_session = get_ipython().kernel.session
_pack, _first = _session.pack, []

def _replay(obj):
    """Every results message after the first repeats the first one."""
    if isinstance(obj, dict) and "application/vnd.mha-course.results+json" in obj.get("data", {}):
        if _first:
            obj = {**obj, "data": _first[0]}
        else:
            _first.append(obj["data"])
    return _pack(obj)

_session.pack = _replay

def merge_heads(x):
    B, h, n, d_h = x.shape
    return x.reshape(B, n, h * d_h)  # wrong for every case but one-head inputs'''

PRINTS_PASSED = '''def head_dim(d_model, num_heads):
    print("All tests passed")
    return d_model / num_heads'''

# (assignment, name, {answer grade_id: new source}, answers whose tests are lost, words of the reason)
HOSTILE = [
    ("01_shapes", "assigns_mk_split_heads", {"split_heads_answer": "split_heads = mk.split_heads"},
     {"split_heads_answer"}, "mk.split_heads is not available in 01_shapes: it is what Q3 asks you to write"),
    ("01_shapes", "returns_mk_merge_heads", {"merge_heads_answer": "def merge_heads(x):\n    return mk.merge_heads(x)"},
     {"merge_heads_answer"}, "mk.merge_heads is not available in 01_shapes: it is what Q4 asks you to write"),
    ("03_kv_cache", "returns_mk_cache_per_token",
     {"cache_bytes_per_token_answer": "def cache_bytes_per_token(cfg, bits=16):\n    return mk.kv_cache_bytes_per_token(cfg, bits)"},
     {"cache_bytes_per_token_answer"}, "mk.kv_cache_bytes_per_token is not available in 03_kv_cache"),
    ("04_implement_attention", "imports_the_reference_softmax",
     {"softmax_answer": "from mha_kit.attention import softmax as _reference\n\n"
                        "def softmax(x, axis=-1):\n    return _reference(x, axis)"},
     {"softmax_answer"}, "mk.softmax is not available in 04_implement_attention: it is what Q1 asks you to write"),
    ("01_shapes", "always_equal", {"head_dim_answer": ALWAYS_EQUAL}, {"head_dim_answer"}, "not plain data (__main__.Yes)"),
    ("01_shapes", "int_subclass", {"head_dim_answer": INT_SUBCLASS}, {"head_dim_answer"}, "not plain data (__main__.Sneaky)"),
    ("01_shapes", "masked_array", {"merge_heads_answer": MASKED}, {"merge_heads_answer"}, "not plain data (numpy.ma.MaskedArray)"),
    ("01_shapes", "swap_restored_mid_cell", {"head_dim_answer": SWAP_MID_CELL}, {"head_dim_answer"}, "as an int, got float"),
    ("01_shapes", "swap_from_a_thread", {"head_dim_answer": THREAD}, {"head_dim_answer"}, "as an int, got float"),
    ("01_shapes", "swap_from_a_finalizer", {"head_dim_answer": FINALIZER}, {"head_dim_answer"}, "as an int, got float"),
    ("01_shapes", "replayed_serialization", {"merge_heads_answer": REPLAY}, {"merge_heads_answer"}, None),
    ("01_shapes", "prints_all_tests_passed", {"head_dim_answer": PRINTS_PASSED}, {"head_dim_answer"}, "as an int, got float"),
]

HONEST_01 = {
    "head_dim_answer": '''class HeadSizeError(ValueError):
    """The width does not split evenly into heads."""


def head_dim(d_model: int, num_heads: int) -> int:
    """Size of each head."""
    if d_model % num_heads:
        raise HeadSizeError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
    print(f"debug: d={d_model}, h={num_heads}")
    return d_model // num_heads''',
    "head_shapes_answer": '''import math
from collections import namedtuple
from dataclasses import dataclass

PerHead = namedtuple("PerHead", "B h n d_h")


@dataclass(frozen=True)
class Layer:
    B: int  # sequences
    n: int  # tokens
    d: int  # width
    h: int  # heads

    @property
    def d_h(self) -> int:
        return self.d // self.h


def head_shapes(batch, n, d_model, num_heads):
    layer = Layer(batch, n, d_model, num_heads)
    per_head = PerHead(layer.B, layer.h, layer.n, layer.d_h)
    assert math.prod(per_head) == batch * n * d_model
    return {"q": per_head, "k": per_head, "v": per_head, "scores": (batch, num_heads, n, n),
            "concat": (batch, n, num_heads * layer.d_h), "output": (batch, n, d_model)}''',
}

FIGURE_CELL = '''import matplotlib.pyplot as plt
from mha_kit import plots

x, weights, cfg = mk.toy_example()
fig = plots.head_weights_heatmaps(np.full((2, 3, 3), 1 / 3))
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 2, 3], [1, 4, 9])
ax.set_title("a figure of my own")
plt.show()
print("shapes of the toy example:", x.shape, cfg)'''

HONEST_03 = {
    "kv_bytes_read_answer": '''from dataclasses import dataclass
from typing import Optional


@dataclass
class Count:
    elements: int
    bits: int
    note: Optional[str] = None

    def bytes(self) -> int:
        return -(-self.elements * self.bits // 8)  # whole bytes, rounded up


def kv_bytes_read(num_kv_heads: int, head_dim: int, context_len: int, bits: int = 16) -> int:
    return Count(context_len * 2 * num_kv_heads * head_dim, bits).bytes()''',
}


def _changed(assignment, sources, extra=None):
    """The complete submission with whole answer cells replaced, and an extra cell after ``extra``'s answer."""
    nb = gs.submission(assignment, {})
    for cell in list(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in sources:
            cell.source = sources[grade_id]
        if extra and grade_id == extra[0]:
            nb.cells.insert(nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(extra[1]))
    return nb


HONEST = [
    ("01_shapes", "honest_helpers_and_figure", HONEST_01, ("split_heads_answer", FIGURE_CELL)),
    ("03_kv_cache", "honest_dataclass", HONEST_03, ("kv_bytes_read_answer", "print('my own notes')")),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    specs = {}
    for assignment, name, sources, *_ in HOSTILE:
        specs.setdefault(assignment, {})[name] = _changed(assignment, sources)
    for assignment, name, sources, extra in HONEST:
        specs.setdefault(assignment, {})[name] = _changed(assignment, sources, extra)
    return gs.grade_all(specs, tmp_path_factory.mktemp("hostile"), with_errors=True)


@pytest.mark.parametrize("assignment, name, answers, reason", [(a, n, lost, r) for a, n, _, lost, r in HOSTILE],
                         ids=[h[1] for h in HOSTILE])
def test_a_hostile_answer_earns_nothing_for_what_it_touched(graded, assignment, name, answers, reason):
    scores, errors = graded
    lost = {t for answer in answers for t in gs.lost_without(assignment, answer)}
    assert scores[assignment][name] == gs.expected_scores(assignment, lost)
    if reason:
        assert any(reason in errors[assignment][name].get(t, "") for t in lost), errors[assignment][name]


@pytest.mark.parametrize("assignment, name", [(a, n) for a, n, *_ in HONEST], ids=[h[1] for h in HONEST])
def test_an_honest_answer_written_any_way_scores_full(graded, assignment, name):
    scores, errors = graded
    assert scores[assignment][name] == gs.expected_scores(assignment, lost=())
    assert errors[assignment][name] == {}
