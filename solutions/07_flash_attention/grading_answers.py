"""Designed answers of 07_flash_attention for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    # exp without the shift: right for small scores, overflows for the hidden ones in the hundreds;
    # the blockwise attention built on it is graded with a correct block_state (error carried forward)
    ("state_without_max", "block_state_answer", "p = np.exp(scores - m[:, None])", "p = np.exp(scores)",
     {"block_state_one_block"}),
    # the shift applied after exp: the same numbers for small scores, inf * 0 for scores in the thousands
    ("state_shift_after_exp", "block_state_answer", "p = np.exp(scores - m[:, None])",
     "p = np.exp(scores) * np.exp(-m[:, None])", {"block_state_one_block"}),
    ("merge_without_rescale", "merge_states_answer",
     "return m, alpha * l_a + beta * l_b, alpha[:, None] * acc_a + beta[:, None] * acc_b",
     "return m, l_a + l_b, acc_a + acc_b", {"merge_states_two_blocks"}),
    ("blockwise_forgot_scale", "blockwise_answer", " / np.sqrt(q.shape[-1])", "",
     {"blockwise_matches_attention"}),
    ("blockwise_scale_over_d_h", "blockwise_answer", " / np.sqrt(q.shape[-1])", " / q.shape[-1]",
     {"blockwise_matches_attention"}),
    # whole blocks only: right when block_size divides s, wrong on the visible ragged case
    ("blockwise_drops_last_block", "blockwise_answer", "range(0, k.shape[0], block_size)",
     "range(0, k.shape[0] - k.shape[0] % block_size, block_size)", {"blockwise_matches_attention"}),
    ("score_bytes_as_float", "score_bytes_answer", "return -(-cfg.num_heads * n * n * bits // 8)",
     "return cfg.num_heads * n * n * bits / 8", {"score_bytes_llama3_8b"}),
    # rounds down: right for whole bytes, wrong for the visible 3-bit numbers
    ("score_bytes_rounded_down", "score_bytes_answer", "return -(-cfg.num_heads * n * n * bits // 8)",
     "return cfg.num_heads * n * n * bits // 8", {"score_bytes_llama3_8b"}),
    ("score_bytes_in_bits", "score_bytes_answer", "return -(-cfg.num_heads * n * n * bits // 8)",
     "return cfg.num_heads * n * n * bits", {"score_bytes_llama3_8b"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "state_without_max": "no_max_shift",
    "state_shift_after_exp": "no_max_shift",
    "merge_without_rescale": "rescale each state's l and acc",
    "blockwise_forgot_scale": "scale_missing",
    "blockwise_scale_over_d_h": "scale_wrong",
    "blockwise_drops_last_block": "ragged_last_block",
    "score_bytes_as_float": "as an int, got float",
    "score_bytes_rounded_down": "rounding",
    "score_bytes_in_bits": "bits_vs_bytes",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "block_state_answer": "def block_state(scores, v_block):\n    n, d_v = scores.shape[0], v_block.shape[1]\n"
                          "    return mk.online_softmax_update(np.full(n, -np.inf), np.zeros(n), np.zeros((n, d_v)), "
                          "scores, v_block)",
    "blockwise_answer": "def blockwise_attention(q, k, v, block_size):\n"
                        "    return mk.flash_attention(q, k, v, block_size=block_size)",
    "score_bytes_answer": "def score_bytes_saved(cfg, n, bits=16):\n    return mk.score_matrix_bytes(cfg, n, bits)",
    "merge_states_answer": "def merge_states(state_a, state_b):\n    return mk.merge_softmax_states(state_a, state_b)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it. (Q2's merge has
#: one since the Flash-Decoding chapter: mk.merge_softmax_states, in REFERENCE_CALLS above.)
NO_REFERENCE = {}
