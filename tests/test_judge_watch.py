"""The watched K and V of 04's Q5 (mha_course.kernel.watch): copies are named, honest answers record nothing.

Each answer runs on watched arrays, as the visible test runs it; no kernel, no nbgrader.
"""
import numpy as np
import pytest

import mha_kit as mk
from mha_course.judge.core import first_failure
from mha_course.kernel.watch import INDEX_ARRAY, RESHAPE_COPY, Watched, copies, watched
from mha_course.wire import encode


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reshape_queries(q, k, v):  # the solution: the g query heads of a key-value head side by side
    h, n, d_h = q.shape
    out = _softmax(q.reshape(len(k), -1, d_h) @ k.transpose(0, 2, 1) / np.sqrt(d_h)) @ v
    return out.reshape(h, n, v.shape[-1])


def einsum(q, k, v):
    h_kv, d_h = len(k), q.shape[-1]
    q4 = q.reshape(h_kv, -1, *q.shape[1:])  # (h_kv, g, n, d_h)
    weights = _softmax(np.einsum("jgnd,jsd->jgns", q4, k) / np.sqrt(d_h))
    return np.einsum("jgns,jsd->jgnd", weights, v).reshape(q.shape[0], q.shape[1], -1)


def loop_over_heads(q, k, v):  # k[i // g] is a view: no copy
    g = len(q) // len(k)
    return np.stack([_softmax(q[i] @ k[i // g].T / np.sqrt(q.shape[-1])) @ v[i // g] for i in range(len(q))])


def broadcast_in_the_product(q, k, v):  # k[:, None] broadcasts over the group inside matmul
    h, n, d_h = q.shape
    q4 = q.reshape(len(k), -1, n, d_h)
    scores = np.matmul(q4, np.swapaxes(k[:, None], -1, -2)) / np.sqrt(d_h)
    return (_softmax(scores) @ v[:, None]).reshape(h, n, -1)


def broadcast_to_view(q, k, v):  # np.broadcast_to is a view with a zero stride: the product reads K once per group
    h, n, d_h = q.shape
    q4 = q.reshape(len(k), -1, n, d_h)
    k4, v4 = (np.broadcast_to(a[:, None], (len(k), h // len(k), *a.shape[1:])) for a in (k, v))
    return (_softmax(q4 @ np.swapaxes(k4, -1, -2) / np.sqrt(d_h)) @ v4).reshape(h, n, -1)


def loop_with_numpy_ints(q, k, v):  # np.int64 indices and .dot: still views and products
    g = len(q) // len(k)
    rows = [_softmax(q[i].dot(k[i // g].T) / np.sqrt(q.shape[-1])).dot(v[i // g]) for i in np.arange(len(q))]
    return np.stack(rows)


def repeat(q, k, v):
    g = len(q) // len(k)
    return loop_over_heads(q, np.repeat(k, g, axis=0), np.repeat(v, g, axis=0))


def repeat_method(q, k, v):
    g = len(q) // len(k)
    return loop_over_heads(q, k.repeat(g, axis=0), v.repeat(g, axis=0))


def fancy_index(q, k, v):
    g = len(q) // len(k)
    return loop_over_heads(q, k[np.arange(len(q)) // g], v[[i // g for i in range(len(q))]])


def stacked_views(q, k, v):
    g = len(q) // len(k)
    return loop_over_heads(q, np.stack([k[i // g] for i in range(len(q))]), np.stack([v[i // g] for i in range(len(q))]))


def broadcast_then_reshape(q, k, v):
    h, n, d_h = q.shape
    full = [np.broadcast_to(a[:, None], (len(k), h // len(k), *a.shape[1:])).reshape(h, *a.shape[1:]) for a in (k, v)]
    return loop_over_heads(q, *full)


def _run(answer, h=8, h_kv=2):
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((h, 3, 4)), rng.standard_normal((h_kv, 5, 4)), rng.standard_normal((h_kv, 5, 4))
    expected = mk.grouped_attention(q, k, v)[0]
    k, v = watched(k, v)
    out = answer(q, k, v)
    return out, copies(k, v), expected


@pytest.mark.parametrize("answer", [reshape_queries, einsum, loop_over_heads, broadcast_in_the_product,
                                    broadcast_to_view, loop_with_numpy_ints])
@pytest.mark.parametrize("h, h_kv", [(8, 2), (4, 1), (3, 3)])  # GQA, MQA, MHA
def test_an_honest_answer_records_nothing_and_returns_a_plain_array(answer, h, h_kv):
    out, recorded, expected = _run(answer, h, h_kv)
    assert recorded == [] and type(out) is np.ndarray and np.allclose(out, expected)


@pytest.mark.parametrize("answer, names", [
    (repeat, ["repeat"]),
    (repeat_method, ["repeat"]),
    (fancy_index, [INDEX_ARRAY]),
    (stacked_views, ["stack"]),
    (broadcast_then_reshape, [RESHAPE_COPY]),
])
def test_a_copy_is_recorded_by_name_and_the_values_stay_right(answer, names):
    out, recorded, expected = _run(answer)
    assert recorded == names and np.allclose(out, expected)


def test_views_stay_watched_and_share_one_record():
    k, v = watched(np.zeros((2, 3, 4)), np.ones((2, 3, 4)))
    view = np.swapaxes(k[:, None], -1, -2)
    assert type(view) is Watched and view.record is k.record is v.record
    np.tile(view, 2)
    assert copies(k, v) == ["tile"] and copies(np.zeros(2)) == []


@pytest.mark.parametrize("recorded, words", [
    (["repeat"], "grouped_attention uses repeat, which copies K or V once per query head"),
    ([INDEX_ARRAY], "grouped_attention indexes K or V with an array, which copies it"),
    ([RESHAPE_COPY], "grouped_attention reshapes a broadcast K or V into one head per query head, which copies it"),
    (["whatever the kernel says"], "does not match the reference"),  # an unknown name is not echoed
])
def test_the_judge_names_a_recorded_copy_in_its_own_words(recorded, words):
    rng = np.random.default_rng(14)
    case = (8, 2, 3, 4, 4, 14)
    q, k, v = rng.standard_normal((8, 3, 4)), rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))
    wrong = mk.grouped_attention(q, k, v)[0] + 1.0  # only the unknown name falls through to the values
    out = wrong if recorded == ["whatever the kernel says"] else mk.grouped_attention(q, k, v)[0]
    (_, _, message) = first_failure("grouped_attention_no_copies", [case], [encode((out, recorded))])
    assert words in message and "whatever" not in message
    assert first_failure("grouped_attention_no_copies", [case], [encode((mk.grouped_attention(q, k, v)[0], []))]) is None
