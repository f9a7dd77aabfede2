"""The judge's questions of 04_implement_attention: each question id's reference and diagnostic messages.

Loaded by path, in the grading process only, by :mod:`mha_course.judge.questions` (which holds the
shared machinery: the :func:`~mha_course.judge.questions.question` decorator and helpers); never in
the grading kernel, never released (``nbgrader_config.py`` ignores ``grading_*.py``).
"""
from __future__ import annotations

import ast

import numpy as np

import mha_kit as mk

from mha_course.judge.expect import expect_close, expect_equal
from mha_course.judge.questions import expect_tuple, rng_arrays as _rng_arrays, question
from mha_course.judge import diagnoses
from mha_course.kernel import watch


@question("softmax", lambda shape, axis, seed: f"softmax of a {shape} array along axis {axis}")
def _softmax(got, shape, axis, seed):
    (x,) = _rng_arrays(seed, shape)
    other = {"that is softmax along another axis: use the axis argument": mk.softmax(x, axis=0)} if axis != 0 else {}
    expect_close(got, mk.softmax(x, axis=axis), f"softmax of a {tuple(shape)} array along axis {axis}", wrong=other)


def scores_array(rows):
    """The array a literal list of rows stands for; the strings ``"-inf"``/``"inf"`` are infinities."""
    return np.array(rows, dtype=float)


@question("softmax_extreme", lambda rows: f"softmax of {rows}")
def _softmax_extreme(got, rows):
    x = scores_array(rows)
    what = f"softmax of {' '.join(np.array2string(x, separator=', ').split())}"  # the rows on one line
    diagnoses.check(got, mk.softmax(x), what, {}, "no_max_shift")
    expect_close(got, mk.softmax(x), what)


@question("causal_mask", lambda n: f"causal_mask({n})")
def _causal_mask(got, n):
    expected, what = mk.causal_mask(n), f"causal_mask({n})"
    rows, cols = np.indices((n, n))  # query i and key j of every entry
    diagnoses.check(got, expected, what, {"off_by_one": [cols < rows, cols <= rows + 1]}, "mask_off_by_one")
    if any(diagnoses.matches(got, upper) for upper in (cols >= rows, cols > rows)) and n > 1:
        raise AssertionError(f"{what}: that is the upper triangle: query i (row i) may see the keys j <= i, "
                             "the ones before it")
    expect_equal(got, expected, what)


def _attention_mistakes(q, k, v, mask=None):
    """Outputs of the mistakes only this question makes (a scale left out or wrong: the catalogue's words)."""
    out = {}
    if mask is not None:
        after = mk.softmax(q @ k.T / np.sqrt(q.shape[-1])) * mask
        out["the mask was applied after softmax: set scores to -inf before it"] = after @ v
    return out


@question("attention", lambda n, s, d_h, d_v, causal, seed: f"attention output (n={n}, s={s}, d_h={d_h}, causal={causal})")
def _attention(got, n, s, d_h, d_v, causal, seed):
    q, k, v = _rng_arrays(seed, (n, d_h), (s, d_h), (s, d_v))
    mask = mk.causal_mask(n, s) if causal else None
    what, expected = f"attention output (n={n}, s={s}, d_h={d_h}, causal={causal})", mk.scaled_dot_product_attention(q, k, v, mask)[0]
    masked = q @ k.T if mask is None else np.where(mask, q @ k.T, -np.inf)
    context = {"unscaled": [mk.softmax(masked) @ v], "rescaled": [mk.softmax(masked / d_h) @ v]}
    diagnoses.check(got, expected, what, context, "scale_missing", "scale_wrong")
    expect_close(got, expected, what, wrong=_attention_mistakes(q, k, v, mask))


def mha_inputs(d, h, n, seed):
    """``(x, weights)`` of a multi-head case: the book's toy example when ``seed`` is None."""
    if seed is None:
        x, weights, _ = mk.toy_example()
        return x, weights
    return np.random.default_rng(seed).standard_normal((n, d)), mk.init_weights(mk.AttentionConfig(d, h), seed=seed)


def _mixed_heads(x, weights, h, causal):
    """Multi-head outputs with the heads split, merged, or both, by a plain reshape (tokens mixed into heads)."""
    (n, d), (w_q, w_k, w_v, w_o) = x.shape, weights
    mask = mk.causal_mask(n) if causal else None
    outs = []
    for split_slip, merge_slip in ((True, False), (False, True), (True, True)):
        def split(t):  # (n, d) -> (h, n, d_h)
            return t.reshape(h, n, d // h) if split_slip else t.reshape(n, h, d // h).transpose(1, 0, 2)
        heads = mk.scaled_dot_product_attention(split(x @ w_q), split(x @ w_k), split(x @ w_v), mask)[0]
        merged = heads.reshape(n, d) if merge_slip else heads.transpose(1, 0, 2).reshape(n, d)  # (n, h*d_h)
        outs.append(merged @ w_o)
    return outs


@question("multi_head_attention", lambda d, h, n, seed, causal: f"multi-head output (d={d}, h={h}, n={n}, causal={causal})")
def _multi_head(got, d, h, n, seed, causal):
    x, weights = mha_inputs(d, h, n, seed)
    expected = mk.multi_head_attention(x, *weights, h, causal=causal)[0]
    what = f"multi-head output (n={x.shape[0]}, d={x.shape[1]}, h={h}, causal={causal})"
    mixed = [out for out in _mixed_heads(x, weights, h, causal) if not np.allclose(out, expected)]
    diagnoses.check(got, expected, what, {"mixed_heads": mixed}, "head_layout")
    expect_close(got, expected, what)


def _gqa_check(got, h, h_kv, n, s, d_h, seed):
    q, k, v = _rng_arrays(seed, (h, n, d_h), (h_kv, s, d_h), (h_kv, s, d_h))
    g = h // h_kv
    what, expected = f"grouped attention output (h={h}, h_kv={h_kv}, n={n}, s={s})", mk.grouped_attention(q, k, v)[0]
    diagnoses.check(got, expected, what, {"other_kv_head": _other_kv_heads(q, k, v, g)}, "wrong_kv_head")
    expect_close(got, expected, what)


def _other_kv_heads(q, k, v, g):
    """Outputs of the wrong pairings of query heads with key-value heads (query head i must read i // g)."""
    h, h_kv = len(q), len(k)

    def attend(i, j):  # query head i with key-value head j
        return mk.scaled_dot_product_attention(q[i], k[j], v[j])[0]

    modulo = np.stack([attend(i, i % h_kv) for i in range(h)])
    # q grouped as (g, h_kv) and never put back: output head j holds query head (j % g) * h_kv + j // g
    strided = np.stack([attend((j % g) * h_kv + j // g, j // g) for j in range(h)])
    return [modulo, strided]


#: Names a copy of K or V goes by, in the answer's code or recorded by the test (mha_course.kernel.watch).
_COPIES = {"repeat", "tile", "take", "kron"}  # each builds g copies of K or V (np.broadcast_to is a view)


def _copy_reason(name, array="K or V"):
    """The one-line reason for an answer that copies K or V with ``name``."""
    if name == watch.INDEX_ARRAY:
        return f"grouped_attention indexes {array} with an array, which copies it: reshape the queries instead"
    if name.startswith("np."):
        return f"grouped_attention builds {name.removesuffix(' on K or V')} of K or V, which copies them once per " \
               "query head: reshape the queries instead"
    if name == watch.RESHAPE_COPY:
        return "grouped_attention reshapes a broadcast K or V into one head per query head, which copies it: " \
               "reshape the queries instead"
    return f"grouped_attention uses {name}, which copies K or V once per query head: reshape the queries instead"


#: Views of an array: a reshape of a view of a broadcast K or V still copies.
_VIEW_CALLS = {"transpose", "swapaxes", "moveaxis", "squeeze", "expand_dims", "broadcast_to"}


def _broadcast(node, tainted):
    """Whether ``node`` is a broadcast array (``np.broadcast_to``), a name bound to one, or a view of one."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in tainted
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name == "broadcast_to":
                return True
            if name not in _VIEW_CALLS:
                return False
            node = func.value if isinstance(func, ast.Attribute) and not _is_numpy(func.value) else (
                node.args[0] if node.args else None)
        elif isinstance(node, ast.Attribute) and node.attr == "T" or isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False


def _is_numpy(node):
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _reshapes_a_broadcast(tree):
    """Whether the code reshapes a broadcast K or V (the group axis merged into the heads: a copy)."""
    tainted = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _broadcast(node.value, tainted):
            tainted |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != "reshape":
            continue
        target = node.args[0] if _is_numpy(node.func.value) and node.args else node.func.value
        if _broadcast(target, tainted):
            return True
    return False


#: Ways to reach a function by a computed name: a copy's name would not be read.
_COMPUTED = {"getattr", "__dict__", "vars", "__getattribute__", "eval", "exec", "__import__", "import_module",
             "attrgetter", "methodcaller", "globals"}
#: Calls whose result is K or V itself, or a plain-array stand-in for it (out of the test's watch).
_SAME = {"asarray", "array", "asanyarray", "ascontiguousarray", "view", "copy"}


def _imported(node):
    return [node.module or ""] * isinstance(node, ast.ImportFrom) + [alias.name for alias in node.names]


def _called(node):
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _kv_names(tree):
    """``k``, ``v`` and every name bound to them or to a plain-array stand-in (``k2 = np.asarray(k)``)."""
    names, changed = {"k", "v"}, True
    while changed:
        changed = False
        for node in ast.walk(tree):
            pairs = [(t, node.value) for t in node.targets] if isinstance(node, ast.Assign) else []
            pairs += [pair for t, value in pairs if isinstance(t, ast.Tuple) and isinstance(value, ast.Tuple)
                      for pair in zip(t.elts, value.elts)]  # k2, v2 = np.asarray(k), np.asarray(v)
            new = {t.id for t, value in pairs if isinstance(t, ast.Name) and _mentions([value], names, deep=False)}
            changed = changed or bool(new - names)
            names |= new
    return names


def _mentions(nodes, names, deep=True):
    """Whether ``nodes`` are (``deep``: hold, in a list, a product or a stand-in call) one of ``names``."""
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.Call) and _called(node) in _SAME and (
                _mentions(node.args, names, deep) or isinstance(node.func, ast.Attribute)
                and _mentions([node.func.value], names, deep)):
            return True
        if deep and isinstance(node, (ast.List, ast.Tuple, ast.Starred, ast.BinOp)) and _mentions(
                list(ast.iter_child_nodes(node)), names, deep):
            return True
        if deep and (isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and node.attr == "T") and (
                _mentions([node.value], names, deep)):  # a view of K or V: k[None], k[:, None], k.T
            return True
        if deep and isinstance(node, ast.Call) and _called(node) in _VIEW_CALLS | {"reshape"} and _mentions(
                [*node.args[:1], *([node.func.value] if isinstance(node.func, ast.Attribute) else [])], names, deep):
            return True
    return False


def no_copies(answers):
    """Reason why ``grouped_attention``'s code copies K or V (``np.repeat``, a fancy index, a reshape of a
    broadcast), reaches numpy by a computed name, or touches the test's record of copies; or None.

    Read here, in the grading process, from the answer's source, which the kernel cannot change: the
    record the test sends (:mod:`mha_course.kernel.watch`) is the learner's own hint, and code in the kernel
    can empty it (``k.record.clear()``) or step around it (``np.asarray(k)`` first).
    """
    source = answers.get("gqa_answer", "")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # the kernel reported it; the cases fail anyway
    kv = _kv_names(tree)
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if isinstance(node, ast.alias):
            name = node.name.rpartition(".")[2]
        if name in _COPIES:
            return _copy_reason(name)
        if isinstance(node, ast.Attribute) and node.attr in ("record", "_record") or isinstance(
                node, (ast.Import, ast.ImportFrom)) and any("watch" in n for n in _imported(node)):
            return "grouped_attention touches the test's record of copies: leave it to the test"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _COPIES:
            return _copy_reason(node.value)
        if name in _COMPUTED:
            return f"grouped_attention reaches a function by a computed name ({name}): write the call out"
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in kv:
            if any(isinstance(part, (ast.Call, ast.List, ast.ListComp)) for part in ast.walk(node.slice)):
                return _copy_reason(watch.INDEX_ARRAY, node.value.id)
        if isinstance(node, ast.Call) and _called(node) in watch.COPYING - _COPIES and _mentions(node.args, kv):
            return _copy_reason(f"np.{_called(node)} on K or V")
    if _reshapes_a_broadcast(tree):
        return _copy_reason(watch.RESHAPE_COPY)
    return None


@question("grouped_attention", lambda h, h_kv, n, s, d_h, seed: f"grouped attention (h={h}, h_kv={h_kv}, n={n}, s={s})")
def _grouped(got, *case):
    _gqa_check(got, *case)


@question("grouped_attention_no_copies", lambda h, h_kv, n, s, d_h, seed: f"grouped attention without copies (h={h}, h_kv={h_kv})",
          static=no_copies)
def _grouped_no_copies(got, *case):
    """``got`` is ``(output, copies recorded)``: the test watches K and V (:mod:`mha_course.kernel.watch`)."""
    expect_tuple(got, 2, "what the test sends (the output, and the copies it saw)")
    out, recorded = got
    names = watch.COPYING | {watch.INDEX_ARRAY, watch.RESHAPE_COPY}
    known = sorted(n for n in recorded if type(n) is str and n in names) if type(recorded) is list else []
    if known:
        raise AssertionError(_copy_reason(known[0]))  # a name the judge knows: fixed words, nothing echoed
    _gqa_check(out, *case)
