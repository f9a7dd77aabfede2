"""Designed answers of 01_shapes for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("head_dim_float_division", "head_dim_answer", "d_model // num_heads", "d_model / num_heads",
     {"head_dim_transformer_base"}),
    ("scores_per_head_size", "head_shapes_answer", '"scores": (batch, num_heads, n, n)',
     '"scores": (batch, num_heads, n, d_model // num_heads)', {"head_shapes_scores_concat_output"}),
    ("split_by_plain_reshape", "split_heads_answer",
     "x = x.reshape(B, n, num_heads, d // num_heads)  # (B, n, h, d_h)\n    return x.transpose(0, 2, 1, 3)",
     "return x.reshape(B, num_heads, n, d // num_heads)", {"split_heads_matches_mha_kit"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "head_dim_float_division": "as an int, got float",
    "scores_per_head_size": "shape of scores",
    "split_by_plain_reshape": "transposed",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "split_heads_answer": "def split_heads(x, num_heads):\n    return mk.split_heads(x, num_heads)",
    "merge_heads_answer": "def merge_heads(x):\n    return mk.merge_heads(x)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {
    # mk.AttentionConfig(d, h).head_dim also gives d // h: a base helper (every assignment's configs),
    # whose one line of division is the question's; nothing in mha_kit lists the arrays' shapes
    "head_dim_answer": "d // h, arithmetic",
    "head_shapes_answer": "shapes from arithmetic; no mha_kit function lists them",
}


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

#: Answers written against the grader: (name, {answer grade_id: new source}, answers whose tests are
#: lost, words of the reason in a failing cell's error, or None). tests/test_grading_hostile.py.
HOSTILE = [
    ("assigns_mk_split_heads", {"split_heads_answer": "split_heads = mk.split_heads"},
     {"split_heads_answer"}, "mk.split_heads is not available in 01_shapes: it is what Q3 asks you to write"),
    ("returns_mk_merge_heads", {"merge_heads_answer": "def merge_heads(x):\n    return mk.merge_heads(x)"},
     {"merge_heads_answer"}, "mk.merge_heads is not available in 01_shapes: it is what Q4 asks you to write"),
    ("always_equal", {"head_dim_answer": ALWAYS_EQUAL}, {"head_dim_answer"}, "not plain data (__main__.Yes)"),
    ("int_subclass", {"head_dim_answer": INT_SUBCLASS}, {"head_dim_answer"}, "not plain data (__main__.Sneaky)"),
    ("masked_array", {"merge_heads_answer": MASKED}, {"merge_heads_answer"}, "not plain data (numpy.ma.MaskedArray)"),
    ("swap_restored_mid_cell", {"head_dim_answer": SWAP_MID_CELL}, {"head_dim_answer"}, "as an int, got float"),
    ("swap_from_a_thread", {"head_dim_answer": THREAD}, {"head_dim_answer"}, "as an int, got float"),
    ("swap_from_a_finalizer", {"head_dim_answer": FINALIZER}, {"head_dim_answer"}, "as an int, got float"),
    ("replayed_serialization", {"merge_heads_answer": REPLAY}, {"merge_heads_answer"}, None),
    ("prints_all_tests_passed", {"head_dim_answer": PRINTS_PASSED}, {"head_dim_answer"}, "as an int, got float"),
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

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    ("honest_helpers_and_figure", HONEST_01, ("split_heads_answer", FIGURE_CELL)),
]
