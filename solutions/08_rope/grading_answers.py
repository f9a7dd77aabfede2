"""Designed answers of 08_rope for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    # every later question uses the learner's rope: each is graded with a correct rope (error carried forward)
    ("rope_frequencies_halved", "rope_answer", "* 2.0 / r)", "* 1.0 / r)", {"rope_matches_mha_kit"}),
    # the rows' own indices instead of the positions: right at 0..n-1 only (Q4's visible case starts at 0)
    ("rope_positions_ignored", "rope_answer", "angle = np.asarray(positions)[:, None]",
     "angle = np.arange(x.shape[-2])[:, None]", {"rope_matches_mha_kit"}),
    ("score_unrotated_key", "rope_score_answer", "@ rope(k[None], [p])[0]", "@ k", {"rope_score_one_pair"}),
    ("distance_reversed", "distance_answer", "starts + distance)  # (t, r): the query", "starts)  # (t, r): the query",
     {"scores_depend_on_distance"}),
    ("values_rotated", "rope_attention_answer", "k_rot, v, mk.causal_mask", "k_rot, rope(v, positions), mk.causal_mask",
     {"rope_attention_causal"}),
    ("attention_keys_unrotated", "rope_attention_answer", "k_rot = rope(q, positions), rope(k, positions)",
     "k_rot = rope(q, positions), k", {"rope_attention_causal"}),
    # scaled by hand on top of the scale mk.scaled_dot_product_attention applies: 1/d_h in all
    ("attention_scaled_twice", "rope_attention_answer", "q_rot, k_rot = rope(q, positions), rope(k, positions)",
     "q_rot, k_rot = rope(q, positions) / np.sqrt(q.shape[-1]), rope(k, positions)", {"rope_attention_causal"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "rope_frequencies_halved": "frequencies are base ** (-2i / r)",
    "rope_positions_ignored": "positions_ignored",
    "score_unrotated_key": "not_rotated",
    "distance_reversed": "query and key at one position",
    "values_rotated": "the values were rotated too",
    "attention_keys_unrotated": "not_rotated",
    "attention_scaled_twice": "scale_wrong",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "rope_answer": "def rope(x, positions, base=10000.0):\n    return mk.rope(x, positions, base)",
    "rope_score_answer": "def rope_score(q, k, m, p):\n    return float(mk.rope_scores(q, k, [m], [p])[0, 0])",
    "distance_answer": "def scores_at_distance(q, k, distance, starts):\n"
                       "    return mk.rope_scores(q, k, np.asarray(starts) + distance, starts).diagonal()",
    "rope_attention_answer": "def rope_attention(q, k, v, positions):\n"
                             "    return mk.rotary_attention(q, k, v, positions, mask=mk.causal_mask(q.shape[-2]))[0]",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}
