"""Designed answers of 10_serving for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks.
WRONG_ANSWERS = [
    ("blocks_rounded_down", "blocks_answer", "-(-n // block_size)", "n // block_size", {"blocks_per_request_16"}),
    # a float per request, even when it is whole: caught on the visible case
    ("blocks_as_floats", "blocks_answer", "-(-n // block_size)", "np.ceil(n / block_size)", {"blocks_per_request_16"}),
    ("paged_counts_used_tokens", "paged_saved_answer", "paged = block_size * sum(-(-n // block_size) for n in lengths)",
     "paged = sum(lengths)", {"paged_saved_small_batch"}),
    ("paged_counts_blocks", "paged_saved_answer", "paged = block_size * sum(", "paged = sum(", {"paged_saved_small_batch"}),
    # keeps every token: right only before the window fills (hidden), wrong on the visible case
    ("rolling_keeps_everything", "rolling_answer", "held = min(num_tokens, window)", "held = num_tokens",
     {"rolling_cache_mistral_7b"}),
    # always a full window: right for Mistral's long sequence, wrong for the visible short one
    ("rolling_always_full", "rolling_answer", "held = min(num_tokens, window)", "held = window",
     {"rolling_cache_mistral_7b"}),
    ("rolling_rounded_down", "rolling_answer", "return -(-elements * bits // 8)", "return elements * bits // 8",
     {"rolling_cache_mistral_7b"}),
    ("rolling_keys_only", "rolling_answer", "mk.kv_elements_per_token(cfg)", "cfg.num_kv_heads * cfg.head_dim",
     {"rolling_cache_mistral_7b"}),
    ("rolling_query_heads", "rolling_answer", "mk.kv_elements_per_token(cfg)", "2 * cfg.num_heads * cfg.head_dim",
     {"rolling_cache_mistral_7b"}),
    ("int8_without_scales", "int8_cache_answer", "return elements + -(-scales * scale_bits // 8)",
     "return elements", {"int8_cache_llama3_8b"}),
    ("int8_scales_per_query_head", "int8_cache_answer", "scales = cfg.num_layers * 2 * cfg.num_kv_heads",
     "scales = cfg.num_layers * 2 * cfg.num_heads", {"int8_cache_llama3_8b"}),
    # int of a float division: whole bytes for fp32 scales, not for the visible 10 bits of scales
    ("int8_scales_rounded_down", "int8_cache_answer", "-(-scales * scale_bits // 8)", "int(scales * scale_bits / 8)",
     {"int8_cache_llama3_8b"}),
    ("int8_scales_in_bits", "int8_cache_answer", "-(-scales * scale_bits // 8)", "scales * scale_bits",
     {"int8_cache_llama3_8b"}),
    ("int8_scales_keys_only", "int8_cache_answer", "scales = cfg.num_layers * 2 * cfg.num_kv_heads",
     "scales = cfg.num_layers * cfg.num_kv_heads", {"int8_cache_llama3_8b"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "blocks_rounded_down": "rounding",
    "blocks_as_floats": "expected plain ints",
    "paged_counts_used_tokens": "paging still holds whole blocks",
    "paged_counts_blocks": "blocks_vs_slots",
    "rolling_keeps_everything": "keeps only the last window tokens",
    "rolling_always_full": "only t tokens are held",
    "rolling_rounded_down": "rounding",
    "rolling_keys_only": "k_and_v",
    "rolling_query_heads": "h_vs_h_kv",
    "int8_without_scales": "the scales are stored too",
    "int8_scales_per_query_head": "h_vs_h_kv",
    "int8_scales_rounded_down": "rounding",
    "int8_scales_in_bits": "bits_vs_bytes",
    "int8_scales_keys_only": "k_and_v",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "blocks_answer": "def blocks_per_request(lengths, block_size):\n"
                     "    return [mk.cache_slots([n], n, block_size).paged // block_size for n in lengths]",
    "paged_saved_answer": "def paged_bytes_saved(lengths, max_len, block_size, bytes_per_token):\n"
                          "    slots = mk.cache_slots(lengths, max_len, block_size)\n"
                          "    return (slots.reserved - slots.paged) * bytes_per_token",
    "rolling_answer": "def rolling_cache_bytes(cfg, num_tokens, window, bits=16):\n"
                      "    return mk.kv_cache_bytes(cfg, min(num_tokens, window), 1, bits)",
    "int8_cache_answer": "def int8_cache_bytes(cfg, num_tokens, scale_bits=32):\n"
                         "    elements = num_tokens * cfg.num_layers * mk.kv_elements_per_token(cfg)\n"
                         "    return mk.quantized_cache_bytes(elements, cfg.num_layers * 2 * cfg.num_kv_heads, scale_bits)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}
