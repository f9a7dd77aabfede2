"""Designed answers of 05_decoding for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("forgot_scale", "decode_step_answer", "mk.decode_attention(q, cache.keys",
     "mk.decode_attention(q * np.sqrt(d_h), cache.keys", {"decode_matches_causal_pass"}),
    ("macs_scores_only", "decode_macs_answer", "return 2 * num_heads", "return num_heads",
     {"decode_macs_llama3_70b"}),
    ("intensity_in_macs", "flops_per_byte_answer", "flops_per_key = 2 * 2 * num_heads",
     "flops_per_key = 2 * num_heads", {"flops_per_byte_gqa"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "forgot_scale": "scale_missing",
    "macs_scores_only": "scores and value mix cost the same",
    "intensity_in_macs": "one multiply-add is 2 FLOPs",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "decode_step_answer": "def decode_step(x_t, w_q, w_k, w_v, w_o, num_heads, cache):\n"
                          "    return mk.cached_attention(x_t[None], w_q, w_k, w_v, w_o, num_heads, cache)[0][0]",
    "decode_macs_answer": "def decode_step_macs(num_heads, head_dim, cache_len):\n"
                          "    return mk.attention_macs(mk.AttentionConfig(num_heads * head_dim, num_heads), cache_len)",
    "flops_per_byte_answer": "def decode_flops_per_byte(num_heads, num_kv_heads, head_dim, bits=16):\n"
                             "    cfg = mk.AttentionConfig(num_heads * head_dim, num_heads, num_kv_heads)\n"
                             "    return mk.arithmetic_intensity(cfg, 1, bits)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}
