"""Designed answers of 06_spot_the_bug for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Question ids whose answer does not depend on a shape (a choice): nothing to vary in hidden tests.
CHOICE_QUESTIONS = {"bug_diagnosis"}

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("mask_still_after_softmax", "fixed_causal_attention_answer",
     "scores = np.where(mk.causal_mask(len(q)), scores, -np.inf)  # mask the scores, before softmax\n"
     "    return mk.softmax(scores) @ v",
     "weights = np.where(mk.causal_mask(len(q)), mk.softmax(scores), 0.0)\n    return weights @ v",
     {"bug_mask_after_softmax"}),
    ("scale_removed", "fixed_attention_answer", "q @ k.T / np.sqrt(q.shape[-1])", "q @ k.T",
     {"bug_wrong_scale"}),
    # passes the h=4, h_kv=2 case (g == h_kv there); the visible h=6, h_kv=3 case fails
    ("kv_head_i_div_h_kv", "fixed_grouped_attention_answer", "j = i // g", "j = i // h_kv",
     {"bug_wrong_kv_head"}),
    ("cache_bytes_as_float", "fixed_cache_bytes_answer", "* bits // 8", "* bits / 8",
     {"bug_cache_without_v"}),
    # the fix is right, the diagnosis is not: only the diagnosis point is lost
    ("q1_names_the_mask_direction", "q1_mistake_answer", 'return "C"', 'return "D"', {"q1_mistake_named"}),
    ("q3_names_a_distractor_in_lower_case", "q3_mistake_answer", 'return "H"', 'return "a"', {"q3_mistake_named"}),
    ("q5_names_a_word_not_a_letter", "q5_mistake_answer", 'return "B"', 'return "only K"', {"q5_mistake_named"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "mask_still_after_softmax": "the mask is still applied after softmax",
    "scale_removed": "scale_missing",
    "kv_head_i_div_h_kv": "wrong_kv_head",
    "cache_bytes_as_float": "as an int, got float",
    "q1_names_the_mask_direction": "is not the one this function makes",
    "q3_names_a_distractor_in_lower_case": "is not the one this function makes",
    "q5_names_a_word_not_a_letter": "answer one letter from A to H",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "fixed_causal_attention_answer": "def fixed_causal_attention(q, k, v):\n"
                                     "    return mk.scaled_dot_product_attention(q, k, v, mk.causal_mask(len(q)))[0]",
    "fixed_attention_answer": "def fixed_attention(q, k, v):\n    return mk.scaled_dot_product_attention(q, k, v)[0]",
    "fixed_grouped_attention_answer": "def fixed_grouped_attention(q, k, v):\n    return mk.grouped_attention(q, k, v)[0]",
    "fixed_merge_heads_answer": "def fixed_merge_heads(heads):\n    return mk.merge_heads(heads[None])[0]",
    "fixed_cache_bytes_answer": "def fixed_cache_bytes(cfg, context_len, batch_size, bits=16):\n"
                                "    return mk.kv_cache_bytes(cfg, context_len, batch_size, bits)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {f"q{i}_mistake_answer": "a letter from the notebook's list of mistakes" for i in range(1, 6)}
