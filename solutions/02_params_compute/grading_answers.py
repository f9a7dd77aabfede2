"""Designed answers of 02_params_compute for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Question ids whose answer does not depend on a shape (a choice): nothing to vary in hidden tests.
CHOICE_QUESTIONS = {"changes_with_h"}

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    # the visible test is MHA, so only the GQA cell (hidden cases included) loses its points
    ("gqa_counted_as_mha", "projection_params_answer", "2 * d_model * num_kv_heads * head_dim",
     "2 * d_model * num_heads * head_dim", {"params_gqa_llama3_70b"}),
    ("macs_scores_only", "attention_macs_answer", "return scores + value_mix", "return scores",
     {"attention_macs_sequence_and_decode"}),
    ("macs_counted_as_flops", "attention_macs_answer", "return scores + value_mix",
     "return 2 * (scores + value_mix)", {"attention_macs_sequence_and_decode"}),
    ("every_count_changes", "changes_with_h_answer", '{"score_count"}',
     '{"projection_params", "attention_macs", "score_count"}', {"changes_with_h_set"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "gqa_counted_as_mha": "h_vs_h_kv",
    "macs_scores_only": "count the scores and the value mix",
    "macs_counted_as_flops": "count multiply-adds, not FLOPs",
    "every_count_changes": "does not change with h: check your set",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "projection_params_answer": "def projection_params(d_model, num_heads, num_kv_heads, head_dim):\n"
                                "    cfg = mk.AttentionConfig(d_model, num_heads, num_kv_heads, head_dim)\n"
                                "    return mk.projection_params(cfg)",
    "attention_macs_answer": "def attention_macs(num_heads, head_dim, n_queries, n_keys):\n"
                             "    cfg = mk.AttentionConfig(num_heads * head_dim, num_heads)\n"
                             "    return mk.attention_macs(cfg, n_keys, n_queries)",
    "score_count_answer": "def score_count(num_heads, n):\n"
                          "    return mk.score_count(mk.AttentionConfig(num_heads, num_heads), n)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {"changes_with_h_answer": "a set of names, the learner's reasoning"}
