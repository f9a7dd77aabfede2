"""Designed answers of 09_masks for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("cross_with_causal_mask", "cross_attention_answer", "mk.scaled_dot_product_attention(q, k, v)[0]",
     "mk.scaled_dot_product_attention(q, k, v, np.tril(np.ones((len(x), len(context)), dtype=bool)))[0]",
     {"cross_attention_output"}),
    ("window_one_too_wide", "sliding_window_answer", "(j > i - window)", "(j >= i - window)",
     {"sliding_window_small"}),
    ("padding_without_causal", "padded_causal_answer", "return real[:, None, :] & causal[None]",
     "return np.broadcast_to(real[:, None, :], (len(lengths), n, n)).copy()", {"padded_causal_batch"}),
    ("chunk_aligned_top_left", "chunk_mask_answer", "np.arange(n_new)[:, None] + n_cached", "np.arange(n_new)[:, None]",
     {"chunk_mask_over_cache"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "cross_with_causal_mask": "cross-attention has no causal mask",
    "window_one_too_wide": "mask_off_by_one",
    "padding_without_causal": "combine the padding mask with the causal mask",
    "chunk_aligned_top_left": "the diagonal ends in the bottom-right corner",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "cross_attention_answer": "def cross_attention(x, context, w_q, w_k, w_v, w_o, num_heads):\n"
                              "    return mk.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, context=context)[0]",
    "sliding_window_answer": "def sliding_window_mask(n, window):\n    return mk.sliding_window_mask(n, window)",
    "padded_causal_answer": "def padded_causal_mask(lengths, n):\n"
                            "    return mk.padding_mask(lengths, n) & mk.causal_mask(n)",
    "chunk_mask_answer": "def chunk_mask(n_new, n_cached):\n    return mk.causal_mask(n_new, n_cached + n_new)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}
