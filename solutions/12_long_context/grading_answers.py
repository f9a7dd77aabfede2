"""Designed answers of 12_long_context for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks. Each fails a visible case with its diagnosis.
WRONG_ANSWERS = [
    # position interpolation instead of llama3: every pair slowed, the fast ones too
    ("llama3_divides_every_pair", "llama3_answer", 'return smooth * theta + (1 - smooth) * theta / rope_scaling["factor"]',
     'return theta / rope_scaling["factor"]', {"llama3_inv_freq_llama31"}),
    ("llama3_blend_reversed", "llama3_answer", "return smooth * theta + (1 - smooth) * theta",
     "return (1 - smooth) * theta + smooth * theta", {"llama3_inv_freq_llama31"}),
    # turns per radian instead of per full turn: the bands move
    ("llama3_without_two_pi", "llama3_answer", "wavelength = 2 * np.pi / theta", "wavelength = 1 / theta",
     {"llama3_inv_freq_llama31"}),
    # the three slips a learner makes with the bands (issue 36): each named by the visible Llama 3.1 case
    ("llama3_scaled_context", "llama3_answer", 'trained = rope_scaling["original_max_position_embeddings"]',
     'trained = rope_scaling["original_max_position_embeddings"] * rope_scaling["factor"]', {"llama3_inv_freq_llama31"}),
    ("llama3_multiplies_by_factor", "llama3_answer", '(1 - smooth) * theta / rope_scaling["factor"]',
     '(1 - smooth) * theta * rope_scaling["factor"]', {"llama3_inv_freq_llama31"}),
    ("llama3_theta_step", "llama3_answer", "base ** (-np.arange(0, head_dim, 2) / head_dim)",
     "base ** (-np.arange(head_dim // 2) / head_dim)", {"llama3_inv_freq_llama31"}),
    ("sinks_evicted", "sink_positions_answer", "return sinks + recent",
     "return list(range(max(num_tokens - window, 0), num_tokens))", {"sink_positions_short_and_long"}),
    # the sinks and the last window added up before the cache is full: positions held twice (visible, 10 tokens)
    ("sinks_and_window_overlap", "sink_positions_answer", "max(num_tokens - window, n_sink)",
     "max(num_tokens - window, 0)", {"sink_positions_short_and_long"}),
    # the window shifted one back: the newest token left out (visible, 20 tokens)
    ("sinks_newest_left_out", "sink_positions_answer", "range(max(num_tokens - window, n_sink), num_tokens)",
     "range(max(num_tokens - window - 1, n_sink), num_tokens - 1)", {"sink_positions_short_and_long"}),
    # the largest L_i never added back to the merged log-sum-exp (visible, L near 1,000)
    ("merge_lse_without_max", "merge_splits_answer", "return out, m + np.log(total)", "return out, np.log(total)",
     {"merge_splits_large_lse"}),
    ("merge_averages_outputs", "merge_splits_answer", "weights = np.exp(lses - m)", "weights = np.ones_like(lses)",
     {"merge_splits_large_lse"}),
    # exp of the raw log-sum-exps: right near 0, inf and NaN near 1,000 (the visible second case)
    ("merge_without_max_shift", "merge_splits_answer", "m = lses.max(axis=0)", "m = np.zeros(lses.shape[1])",
     {"merge_splits_large_lse"}),
    # every layer keeps every token (visible: 35 of the 42 layers are local with Gemma 3's layout)
    ("local_global_window_ignored", "local_global_answer",
     "(cfg.num_layers - n_global) * min(context_len, window)", "(cfg.num_layers - n_global) * context_len",
     {"local_global_gemma2_128k"}),
    # one global layer per local_per_global layers, not per group of local_per_global + 1
    ("local_global_groups_too_small", "local_global_answer", "cfg.num_layers // (local_per_global + 1)",
     "cfg.num_layers // local_per_global", {"local_global_gemma2_128k"}),
    ("local_global_query_heads", "local_global_answer", "2 * cfg.num_kv_heads * cfg.head_dim * 2",
     "2 * cfg.num_heads * cfg.head_dim * 2", {"local_global_gemma2_128k"}),
    # the window without the sinks (visible, 131,072 tokens: 1,020 tokens where 1,024 are kept)
    ("sink_bytes_without_sinks", "sink_bytes_answer", "min(num_tokens, n_sink + window)", "min(num_tokens, window)",
     {"sink_bytes_llama3_8b"}),
    # full from the first token (visible, 600 tokens)
    ("sink_bytes_always_full", "sink_bytes_answer", "min(num_tokens, n_sink + window)", "n_sink + window",
     {"sink_bytes_llama3_8b"}),
    # Q7's slips: the cut-offs at L * factor, wavelengths per radian, dimensions counted for pairs
    ("bands_scaled_context", "llama3_bands_answer", 'trained = rope_scaling["original_max_position_embeddings"]',
     'trained = rope_scaling["original_max_position_embeddings"] * rope_scaling["factor"]', {"llama3_bands_llama31"}),
    ("bands_without_two_pi", "llama3_bands_answer", "wavelength = 2 * np.pi / theta", "wavelength = 1 / theta",
     {"llama3_bands_llama31"}),
    # the slowest wavelength before scaling: the counts are right, the float is 8x too short
    ("bands_slowest_unscaled", "llama3_bands_answer", "float(2 * np.pi / scaled.min())", "float(wavelength.max())",
     {"llama3_bands_llama31"}),
    ("soft_cap_hard_clip", "soft_cap_answer", "return cap * np.tanh(scores / cap)",
     "return np.clip(scores, -cap, cap)", {"soft_cap_gemma2"}),
    ("soft_cap_tanh_then_scale", "soft_cap_answer", "return cap * np.tanh(scores / cap)",
     "return cap * np.tanh(scores)", {"soft_cap_gemma2"}),
]

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "llama3_bands_answer": "def llama3_bands(head_dim, base, rope_scaling):\n"
                           "    scaled, _ = mk.rope_inv_freq(head_dim, base, rope_scaling)\n"
                           "    stretch = mk.stretch_per_pair(head_dim, base, rope_scaling)\n"
                           "    kept, divided = int(np.sum(stretch == 1)), int(np.sum(stretch == rope_scaling['factor']))\n"
                           "    return kept, len(stretch) - kept - divided, divided, float(2 * np.pi / scaled.min())",
    "local_global_answer": "def local_global_bytes(cfg, context_len, local_per_global, window):\n"
                           "    layout = mk.LayerLayout(name='x', title='x', local_per_global=local_per_global, "
                           "window=window, cite='x', source='x')\n"
                           "    return mk.layout_kv_bytes(cfg, context_len, layout)",
    "sink_bytes_answer": "def sink_cache_bytes(cfg, num_tokens, n_sink, window):\n"
                         "    return mk.kv_cache_bytes(cfg, min(num_tokens, n_sink + window))",
    "llama3_answer": "def llama3_inv_freq(head_dim, base, rope_scaling):\n"
                     "    return mk.rope_inv_freq(head_dim, base, rope_scaling)[0]",
    "sink_positions_answer": "def sink_positions(n_sink, window, num_tokens):\n"
                             "    cache = mk.SinkCache(n_sink, window)\n"
                             "    cache.append(np.zeros((1, num_tokens, 1)), np.zeros((1, num_tokens, 1)))\n"
                             "    return cache.positions.tolist()",
    "merge_splits_answer": "def merge_splits(outs, lses):\n"
                           "    state = (lses[0], np.ones_like(lses[0]), outs[0])\n"
                           "    for out, lse in zip(outs[1:], lses[1:]):\n"
                           "        state = mk.merge_softmax_states(state, (lse, np.ones_like(lse), out))\n"
                           "    m, denom, acc = state\n"
                           "    return acc / denom[:, None], m + np.log(denom)",
    "soft_cap_answer": "def soft_cap(scores, cap):\n    return mk.soft_cap(scores, cap)",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}

HONEST_12 = {
    # Meta's reference code: a loop over the pairs with three branches, then an array
    "llama3_answer": '''import math


def llama3_inv_freq(head_dim: int, base: float, rope_scaling: dict) -> np.ndarray:
    """Meta's apply_scaling, one pair at a time."""
    factor = rope_scaling["factor"]
    old_context = rope_scaling["original_max_position_embeddings"]
    low, high = rope_scaling["low_freq_factor"], rope_scaling["high_freq_factor"]
    new = []
    for i in range(head_dim // 2):
        freq = 1.0 / base ** (2 * i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < old_context / high:
            new.append(freq)
        elif wavelen > old_context / low:
            new.append(freq / factor)
        else:
            smooth = (old_context / wavelen - low) / (high - low)
            new.append((1 - smooth) * freq / factor + smooth * freq)
    return np.array(new)''',
    "sink_positions_answer": '''def sink_positions(n_sink, window, num_tokens):
    """Sets, then sorted: the overlap of a short text is counted once."""
    kept = set(range(min(n_sink, num_tokens))) | set(range(max(num_tokens - window, 0), num_tokens))
    return sorted(kept)''',
    # log-sum-exp with numpy's own ufunc, and a namedtuple for the result
    "merge_splits_answer": '''from collections import namedtuple

Merged = namedtuple("Merged", "out lse")


def merge_splits(outs, lses):
    lse = np.logaddexp.reduce(lses, axis=0)  # (n,)
    out = np.einsum("sn,snd->nd", np.exp(lses - lse), outs)
    return Merged(out, lse)''',
    "soft_cap_answer": '''def soft_cap(scores, cap):
    capped = np.empty_like(scores, dtype=float)
    np.tanh(np.divide(scores, cap), out=capped)
    capped *= cap
    return capped''',
}

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    ("honest_loop_sets_and_logaddexp", HONEST_12, ("merge_splits_answer", "print('the splits merge exactly')")),
    # a right answer that makes numpy warn: the warning is a note, never a failure (issue 24)
    ("honest_soft_cap_that_warns", {"soft_cap_answer": '''def soft_cap(scores, cap):
    return cap * (1 - 2 / (np.exp(2 * scores / cap) + 1))  # tanh(y) = 1 - 2 / (e^2y + 1)'''}, None),
    # numpy ints in the list: positions are counts, Python or numpy (issue 36)
    ("honest_numpy_positions", {"sink_positions_answer": '''def sink_positions(n_sink, window, num_tokens):
    kept = np.union1d(np.arange(min(n_sink, num_tokens)), np.arange(max(num_tokens - window, 0), num_tokens))
    return list(kept)  # numpy int64 items'''}, None),
]


#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "bands_scaled_context": "the cut-offs use L, the trained context",
    "bands_without_two_pi": "a wavelength is the tokens one full turn (2 pi) takes",
    "bands_slowest_unscaled": "that is before scaling",
    "local_global_window_ignored": "a local layer caches at most its window",
    "local_global_groups_too_small": "one global layer in each group of local_per_global + 1 layers",
    "local_global_query_heads": "h_vs_h_kv",
    "sink_bytes_without_sinks": "the n_sink sinks are kept too",
    "sink_bytes_always_full": "before the cache is full it holds only the tokens seen so far",
    "llama3_scaled_context": "the cut-offs use L, the trained context",
    "llama3_multiplies_by_factor": "the slow pairs were multiplied by the factor",
    "llama3_theta_step": "pair i covers dimensions 2i and 2i + 1",
    "sinks_newest_left_out": "is left out: the window ends with it",
    "merge_lse_without_max": "add the largest L_i back",
    "llama3_divides_every_pair": "every pair was divided by the factor",
    "llama3_blend_reversed": "the blend is reversed",
    "llama3_without_two_pi": "a wavelength is the tokens one full turn (2 pi) takes",
    "sinks_evicted": "they are never evicted",
    "sinks_and_window_overlap": "nothing is evicted before the cache is full",
    "merge_averages_outputs": "the splits are weighted equally",
    "merge_without_max_shift": "no_max_shift",
    "soft_cap_hard_clip": "that is a hard clip",
    "soft_cap_tanh_then_scale": "the slope at 0 is 1",
}
