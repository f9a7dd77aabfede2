"""Test tables of assignments 07-10, merged into grading_support's tables.

Same formats: :data:`WRONG_ANSWERS` as ``grading_support.WRONG_ANSWERS`` (name, answer grade_id,
old text, new text, test cells that must score zero); :data:`REFERENCE_CALLS` as ``grading_support.REFERENCE_CALLS``
(answers that only call the ``mha_kit`` reference the question asks for).
"""
from __future__ import annotations

ASSIGNMENTS_V2 = ("07_flash_attention", "08_rope", "09_masks", "10_serving")  # graded in test_grading_scores_c and _d

WRONG_ANSWERS = {
    "07_flash_attention": [
        # exp without the shift: right for small scores, overflows for the hidden ones in the hundreds;
        # the blockwise attention built on it is graded with a correct block_state (error carried forward)
        ("state_without_max", "block_state_answer", "p = np.exp(scores - m[:, None])", "p = np.exp(scores)",
         {"block_state_one_block"}),
        ("merge_without_rescale", "merge_states_answer",
         "return m, alpha * l_a + beta * l_b, alpha[:, None] * acc_a + beta[:, None] * acc_b",
         "return m, l_a + l_b, acc_a + acc_b", {"merge_states_two_blocks"}),
        ("blockwise_forgot_scale", "blockwise_answer", " / np.sqrt(q.shape[-1])", "",
         {"blockwise_matches_attention"}),
        # whole blocks only: right when block_size divides s (the visible case), wrong on ragged ones (hidden)
        ("blockwise_drops_last_block", "blockwise_answer", "range(0, k.shape[0], block_size)",
         "range(0, k.shape[0] - k.shape[0] % block_size, block_size)", {"blockwise_matches_attention"}),
        ("score_bytes_as_float", "score_bytes_answer", "return -(-cfg.num_heads * n * n * bits // 8)",
         "return cfg.num_heads * n * n * bits / 8", {"score_bytes_llama3_8b"}),
        # rounds down: right for whole bytes (the visible case), wrong for 3-bit numbers (hidden)
        ("score_bytes_rounded_down", "score_bytes_answer", "return -(-cfg.num_heads * n * n * bits // 8)",
         "return cfg.num_heads * n * n * bits // 8", {"score_bytes_llama3_8b"}),
    ],
    "08_rope": [
        # every later question uses the learner's rope: each is graded with a correct rope (error carried forward)
        ("rope_frequencies_halved", "rope_answer", "* 2.0 / r)", "* 1.0 / r)", {"rope_matches_mha_kit"}),
        ("score_unrotated_key", "rope_score_answer", "@ rope(k[None], [p])[0]", "@ k", {"rope_score_one_pair"}),
        ("distance_reversed", "distance_answer", "starts + distance)  # (t, r): the query", "starts)  # (t, r): the query",
         {"scores_depend_on_distance"}),
        ("values_rotated", "rope_attention_answer", "k_rot, v, mk.causal_mask", "k_rot, rope(v, positions), mk.causal_mask",
         {"rope_attention_causal"}),
    ],
    "09_masks": [
        ("cross_with_causal_mask", "cross_attention_answer", "mk.scaled_dot_product_attention(q, k, v)[0]",
         "mk.scaled_dot_product_attention(q, k, v, np.tril(np.ones((len(x), len(context)), dtype=bool)))[0]",
         {"cross_attention_output"}),
        ("window_one_too_wide", "sliding_window_answer", "(j > i - window)", "(j >= i - window)",
         {"sliding_window_small"}),
        ("padding_without_causal", "padded_causal_answer", "return real[:, None, :] & causal[None]",
         "return np.broadcast_to(real[:, None, :], (len(lengths), n, n)).copy()", {"padded_causal_batch"}),
        ("chunk_aligned_top_left", "chunk_mask_answer", "np.arange(n_new)[:, None] + n_cached", "np.arange(n_new)[:, None]",
         {"chunk_mask_over_cache"}),
    ],
    "10_serving": [
        ("blocks_rounded_down", "blocks_answer", "-(-n // block_size)", "n // block_size", {"blocks_per_request_16"}),
        # a float per request, even when it is whole: caught on the visible case
        ("blocks_as_floats", "blocks_answer", "-(-n // block_size)", "np.ceil(n / block_size)", {"blocks_per_request_16"}),
        ("paged_counts_used_tokens", "paged_saved_answer", "paged = block_size * sum(-(-n // block_size) for n in lengths)",
         "paged = sum(lengths)", {"paged_saved_small_batch"}),
        # keeps every token: right only before the window fills (hidden), wrong on the visible case
        ("rolling_keeps_everything", "rolling_answer", "held = min(num_tokens, window)", "held = num_tokens",
         {"rolling_cache_mistral_7b"}),
        # always a full window: right on the visible case, wrong for a sequence shorter than it (hidden)
        ("rolling_always_full", "rolling_answer", "held = min(num_tokens, window)", "held = window",
         {"rolling_cache_mistral_7b"}),
        ("int8_without_scales", "int8_cache_answer", "return elements + -(-scales * scale_bits // 8)",
         "return elements", {"int8_cache_llama3_8b"}),
        ("int8_scales_per_query_head", "int8_cache_answer", "scales = cfg.num_layers * 2 * cfg.num_kv_heads",
         "scales = cfg.num_layers * 2 * cfg.num_heads", {"int8_cache_llama3_8b"}),
        # int of a float division: whole bytes on every visible and most hidden cases, not for 12 bits of scales
        ("int8_scales_rounded_down", "int8_cache_answer", "-(-scales * scale_bits // 8)", "int(scales * scale_bits / 8)",
         {"int8_cache_llama3_8b"}),
    ],
}

# {assignment: {answer grade_id: source}}: the answer is one call of the reference it must not use
REFERENCE_CALLS = {
    "07_flash_attention": {
        "block_state_answer": "def block_state(scores, v_block):\n    n, d_v = scores.shape[0], v_block.shape[1]\n"
                              "    return mk.online_softmax_update(np.full(n, -np.inf), np.zeros(n), np.zeros((n, d_v)), "
                              "scores, v_block)",
        "blockwise_answer": "def blockwise_attention(q, k, v, block_size):\n"
                            "    return mk.flash_attention(q, k, v, block_size=block_size)",
        "score_bytes_answer": "def score_bytes_saved(cfg, n, bits=16):\n    return mk.score_matrix_bytes(cfg, n, bits)",
    },
    "08_rope": {
        "rope_score_answer": "def rope_score(q, k, m, p):\n    return float(mk.rope_scores(q, k, [m], [p])[0, 0])",
        "rope_attention_answer": "def rope_attention(q, k, v, positions):\n"
                                 "    return mk.rotary_attention(q, k, v, positions, mask=mk.causal_mask(q.shape[-2]))[0]",
    },
    "09_masks": {
        "cross_attention_answer": "def cross_attention(x, context, w_q, w_k, w_v, w_o, num_heads):\n"
                                  "    return mk.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, context=context)[0]",
        "sliding_window_answer": "def sliding_window_mask(n, window):\n    return mk.sliding_window_mask(n, window)",
        "padded_causal_answer": "def padded_causal_mask(lengths, n):\n"
                                "    return mk.padding_mask(lengths, n) & mk.causal_mask(n)",
        "chunk_mask_answer": "def chunk_mask(n_new, n_cached):\n    return mk.causal_mask(n_new, n_cached + n_new)",
    },
    "10_serving": {
        "blocks_answer": "def blocks_per_request(lengths, block_size):\n"
                         "    return [mk.cache_slots([n], n, block_size).paged // block_size for n in lengths]",
        "rolling_answer": "def rolling_cache_bytes(cfg, num_tokens, window, bits=16):\n"
                          "    return mk.kv_cache_bytes(cfg, min(num_tokens, window), 1, bits)",
        "int8_cache_answer": "def int8_cache_bytes(cfg, num_tokens, scale_bits=32):\n"
                             "    elements = num_tokens * cfg.num_layers * mk.kv_elements_per_token(cfg)\n"
                             "    return mk.quantized_cache_bytes(elements, cfg.num_layers * 2 * cfg.num_kv_heads, scale_bits)",
    },
}
