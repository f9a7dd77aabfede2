"""Designed answers of 04_implement_attention for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("softmax_without_max", "softmax_answer", "np.exp(x - np.max(x, axis=axis, keepdims=True))", "np.exp(x)",
     {"softmax_large_scores_stable"}),
    # multi-head attention builds on the learner's attention (Q4 uses Q3): graded with a correct one, it keeps its points
    ("forgot_scale", "attention_answer", "scores = q @ k.T / np.sqrt(q.shape[-1])", "scores = q @ k.T",
     {"attention_unmasked", "attention_causal"}),
    ("mask_after_softmax", "attention_answer",
     "        scores = np.where(mask, scores, -np.inf)  # before softmax: masked keys get weight 0\n"
     "    return softmax(scores) @ v",
     "        return (softmax(scores) * mask) @ v\n    return softmax(scores) @ v",
     {"attention_causal"}),
    # the mask's two classic slips (issue 36): the upper triangle, and a token that may not see itself
    ("mask_upper_triangle", "causal_mask_answer", "np.arange(n)[None, :] <= np.arange(n)[:, None]",
     "np.arange(n)[None, :] >= np.arange(n)[:, None]", {"causal_mask_matches_reference"}),
    ("mask_without_diagonal", "causal_mask_answer", "np.arange(n)[None, :] <= np.arange(n)[:, None]",
     "np.arange(n)[None, :] < np.arange(n)[:, None]", {"causal_mask_matches_reference"}),
    # heads cut with a plain reshape: the toy example's tokens mixed into heads (01's layout slip, here in Q4)
    ("mha_heads_by_plain_reshape", "multi_head_answer", "(x @ w).reshape(n, h, d_h).transpose(1, 0, 2)",
     "(x @ w).reshape(h, n, d_h)", {"multi_head_matches_mha_kit"}),
    ("gqa_copies_kv", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
     "k, v = np.repeat(k, h // h_kv, axis=0), np.repeat(v, h // h_kv, axis=0)\n"
     "    h_kv = h\n    q_grouped = q", {"gqa_without_copies"}),
    # the same copy with a fancy index: right values, caught by the visible test (it watches k and v)
    ("gqa_fancy_index_copy", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
     "k, v = k[np.arange(h) // (h // h_kv)], v[np.arange(h) // (h // h_kv)]\n    h_kv = h\n    q_grouped = q",
     {"gqa_without_copies"}),
    ("gqa_modulo_head", "gqa_answer", "q_grouped = q.reshape(h_kv, (h // h_kv) * n, d_h)",
     "q_grouped = q.reshape(h // h_kv, h_kv, n, d_h).transpose(1, 0, 2, 3).reshape(h_kv, -1, d_h)",
     {"gqa_matches_mha_kit", "gqa_without_copies"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "softmax_without_max": "no_max_shift",
    "forgot_scale": "scale_missing",
    "mask_after_softmax": "the mask was applied after softmax",
    "mask_upper_triangle": "that is the upper triangle",
    "mask_without_diagonal": "mask_off_by_one",
    "mha_heads_by_plain_reshape": "head_layout",
    "gqa_copies_kv": "uses repeat, which copies K or V once per query head",
    "gqa_fancy_index_copy": "with an array, which copies it",
    "gqa_modulo_head": "wrong_kv_head",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "softmax_answer": "def softmax(x, axis=-1):\n    return mk.softmax(x, axis)",
    "causal_mask_answer": "def causal_mask(n):\n    return mk.causal_mask(n)",
    "attention_answer": "def attention(q, k, v, mask=None):\n    return mk.scaled_dot_product_attention(q, k, v, mask)[0]",
    "multi_head_answer": "def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=False):\n"
                         "    return mk.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, causal=causal)[0]",
    "gqa_answer": "def grouped_attention(q, k, v):\n    return mk.grouped_attention(q, k, v)[0]",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}

#: Answers written against the grader: (name, {answer grade_id: new source}, answers whose tests are
#: lost, words of the reason in a failing cell's error, or None). tests/test_grading_hostile.py.
HOSTILE = [
    ("imports_the_reference_softmax",
     {"softmax_answer": "from mha_kit.attention import softmax as _reference\n\n"
                        "def softmax(x, axis=-1):\n    return _reference(x, axis)"},
     {"softmax_answer"}, "mk.softmax is not available in 04_implement_attention: it is what Q1 asks you to write"),
]

# A right answer written with a log-mask: log(True) = 0 keeps a score, log(False) = -inf masks it,
# and numpy warns "divide by zero encountered in log" on the way. The warning is a note of the test
# that ran it, never a loss (tests/test_grading_hostile.py).
LOG_MASK = '''def attention(q, k, v, mask=None):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + np.log(mask)  # 0 where allowed, -inf where masked
    return softmax(scores) @ v'''

# GQA with np.broadcast_to: a view with a zero stride over the group, read by a batched product that
# never copies K or V. Not a copy, so neither the watched test nor the code check may dock it.
BROADCAST_VIEW = '''def grouped_attention(q, k, v):
    h, n, d_h = q.shape
    h_kv = k.shape[0]
    q4 = q.reshape(h_kv, h // h_kv, n, d_h)
    k4 = np.broadcast_to(k[:, None], (h_kv, h // h_kv) + k.shape[1:])
    v4 = np.broadcast_to(v[:, None], (h_kv, h // h_kv) + v.shape[1:])
    return (softmax(q4 @ np.swapaxes(k4, -1, -2) / np.sqrt(d_h)) @ v4).reshape(h, n, v.shape[-1])'''

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    ("log_mask_warns", {"attention_answer": LOG_MASK}, None),
    ("gqa_broadcast_to_view", {"gqa_answer": BROADCAST_VIEW}, None),
]
