"""Designed answers of 13_plan_deployment for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks. Each is caught by a visible case.
WRONG_ANSWERS = [
    # h_kv / t heads, never fewer than one: right up to t = h_kv (hidden t = 4), a quarter at the visible t = 32
    ("cache_divides_past_h_kv", "cache_answer", "heads = max(cfg.num_kv_heads // tp, 1)",
     "heads = cfg.num_kv_heads / tp", {"cache_per_gpu_llama3_70b_deepseek_v3"}),
    ("cache_splits_the_latent", "cache_answer", "return -(-numbers * bits // 8)  # whole on every GPU",
     "return -(-numbers * bits // 8) // tp", {"cache_per_gpu_llama3_70b_deepseek_v3"}),
    ("cache_keys_only", "cache_answer", "per_head = context_len * cfg.num_layers * 2 * cfg.head_dim",
     "per_head = context_len * cfg.num_layers * cfg.head_dim", {"cache_per_gpu_llama3_70b_deepseek_v3"}),
    ("cache_query_heads", "cache_answer", "max(cfg.num_kv_heads // tp, 1)", "max(cfg.num_heads // tp, 1)",
     {"cache_per_gpu_llama3_70b_deepseek_v3"}),
    # whole bytes for bf16, not for the visible 3-bit toy
    ("cache_rounded_down", "cache_answer", "return -(-per_head * heads * bits // 8)",
     "return per_head * heads * bits // 8", {"cache_per_gpu_llama3_70b_deepseek_v3"}),
    # right at batch 1, wrong at the visible batch 64
    ("decode_tpot_per_sequence", "decode_answer", "return step, batch_size / step / tp",
     "return step / batch_size, batch_size / step / tp", {"decode_floor_llama3_70b_8_h100"}),
    ("decode_cache_read_once", "decode_answer", "cache = batch_size * cache_per_gpu(", "cache = cache_per_gpu(",
     {"decode_floor_llama3_70b_8_h100"}),
    ("decode_whole_weights", "decode_answer", "weights = 2 * mk.dense_decoder_params(facts) / tp",
     "weights = 2 * mk.dense_decoder_params(facts)", {"decode_floor_llama3_70b_8_h100"}),
    ("decode_rate_per_replica", "decode_answer", "batch_size / step / tp", "batch_size / step",
     {"decode_floor_llama3_70b_8_h100"}),
    ("crossover_rounded_down", "crossover_answer", "return -(-weights // (tp * per_sequence))",
     "return weights // (tp * per_sequence)", {"cache_outweighs_llama3_70b"}),
    ("crossover_as_float", "crossover_answer", "return -(-weights // (tp * per_sequence))",
     "return weights / tp / per_sequence", {"cache_outweighs_llama3_70b"}),
    ("crossover_whole_weights", "crossover_answer", "-(-weights // (tp * per_sequence))", "-(-weights // per_sequence)",
     {"cache_outweighs_llama3_70b"}),
    ("experts_one_token_short", "experts_answer", "tokens = k + 1", "tokens = k", {"verification_experts_deepseek_v3"}),
    ("experts_count_routings", "experts_answer", "touched = num_experts * (1 - missed)", "touched = tokens * top_k",
     {"verification_experts_deepseek_v3"}),
    ("experts_ratio_to_all_experts", "experts_answer", "touched / top_k  #", "touched / num_experts  #",
     {"verification_experts_deepseek_v3"}),
    ("best_k_one_position_short", "best_k_answer", "for i in range(k + 1)", "for i in range(k)",
     {"best_draft_length_dense_and_moe"}),
    ("best_k_free_drafts", "best_k_answer", "(k * cost_ratio + 1 + verify_growth * k)", "(1 + verify_growth * k)",
     {"best_draft_length_dense_and_moe"}),
    # passes while a draft pays (the first two visible cases); the slow draft of the third does not
    ("best_k_without_plain_decoding", "best_k_answer", "best_k, best = 0, 1.0", "best_k, best = 0, 0.0",
     {"best_draft_length_dense_and_moe"}),
    ("best_k_verify_per_token", "best_k_answer", "(k * cost_ratio + 1 + verify_growth * k)",
     "(k * cost_ratio + k + 1 + verify_growth * k)", {"best_draft_length_dense_and_moe"}),
    ("gpus_without_ceil", "gpus_answer", "math.ceil(in_flight / batch) * tp", "int(in_flight / batch) * tp",
     {"gpus_for_rate_llama3_70b_h100"}),
    ("gpus_counts_replicas", "gpus_answer", "math.ceil(in_flight / batch) * tp", "math.ceil(in_flight / batch)",
     {"gpus_for_rate_llama3_70b_h100"}),
    # right for the first visible case (the target binds), wrong for the 32K one (memory binds)
    ("gpus_ignore_memory", "gpus_answer", "batch = min(by_time, by_memory)", "batch = by_time",
     {"gpus_for_rate_llama3_70b_h100"}),
    ("gpus_stay_at_target", "gpus_answer", "in_flight = rate * output_tokens * tpot  #",
     "in_flight = rate * output_tokens * tpot_target  #", {"gpus_for_rate_llama3_70b_h100"}),
]

#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "cache_divides_past_h_kv": "the key-value heads are replicated",
    "cache_splits_the_latent": "every GPU keeps all of it",
    "cache_keys_only": "k_and_v",
    "cache_query_heads": "h_vs_h_kv",
    "cache_rounded_down": "rounding",
    "decode_tpot_per_sequence": "TPOT is the whole step",
    "decode_cache_read_once": "every sequence reads its own cache",
    "decode_whole_weights": "only its own share of the weights",
    "decode_rate_per_replica": "divide the replica's tokens by its tp GPUs",
    "crossover_rounded_down": "reaches the weights: round up",
    "crossover_as_float": "a batch is a whole number of sequences",
    "crossover_whole_weights": "divide them by tp",
    "experts_one_token_short": "the last accepted token and the k drafts",
    "experts_count_routings": "count distinct experts, not routings",
    "experts_ratio_to_all_experts": "reads top_k experts, not all of them",
    "best_k_one_position_short": "can emit k + 1 tokens",
    "best_k_free_drafts": "the draft's runs cost time too",
    "best_k_without_plain_decoding": "plain decoding (k = 0, speed-up 1) is best",
    "best_k_verify_per_token": "one step of the target, not k + 1",
    "gpus_without_ceil": "a fraction of a replica is a whole one",
    "gpus_counts_replicas": "each is tp GPUs",
    "gpus_ignore_memory": "must also fit beside the weights",
    "gpus_stay_at_target": "the batch's own TPOT floor",
}

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "cache_answer": "def cache_per_gpu(cfg, context_len, tp, bits=16):\n"
                    "    return mk.kv_cache_bytes_per_gpu(cfg, context_len, tp, 1, bits)",
    "decode_answer": "def decode_floor(facts, gpu, tp, context_len, batch_size):\n"
                     "    plan = mk.plan_deployment(facts, gpu, num_gpus=tp, tp=tp, context_len=context_len,\n"
                     "                              batch_size=batch_size)\n"
                     "    return plan.tpot_s, plan.tokens_per_s_per_gpu",
    "crossover_answer": "def cache_outweighs_weights(facts, tp, context_len):\n"
                        "    per_sequence = mk.kv_cache_bytes_per_gpu(facts.config, context_len, tp)\n"
                        "    return -(-2 * mk.dense_decoder_params(facts) // (tp * per_sequence))",
    "experts_answer": "def verification_experts(num_experts, top_k, k):\n"
                      "    touched = mk.experts_touched(k + 1, num_experts, top_k)\n"
                      "    return touched, touched / top_k",
    "best_k_answer": "def best_draft_length(alpha, cost_ratio, max_k, verify_growth=0.0):\n"
                     "    speedups = [mk.speculative_speedup(alpha, k, cost_ratio, 1 + verify_growth * k)\n"
                     "                for k in range(max_k + 1)]\n"
                     "    return speedups.index(max(speedups)), max(speedups)",
    "gpus_answer": "def gpus_for_rate(facts, gpu, tp, context_len, rate, output_tokens, tpot_target):\n"
                   "    per_sequence = mk.kv_cache_bytes_per_gpu(facts.config, context_len, tp)\n"
                   "    weights = 2 * mk.dense_decoder_params(facts) / tp\n"
                   "    batch = int(min(tpot_target * gpu.hbm_bandwidth - weights, gpu.hbm_bytes - weights) // per_sequence)\n"
                   "    tpot = (weights + batch * per_sequence) / gpu.hbm_bandwidth\n"
                   "    return math.ceil(rate * output_tokens * tpot / batch) * tp",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}

HONEST_13 = {
    "cache_answer": '''def cache_per_gpu(cfg, context_len, tp, bits=16):
    if hasattr(cfg, "kv_lora_rank"):
        per_layer = cfg.kv_lora_rank + cfg.qk_rope_head_dim  # every rank holds the latent
    elif tp <= cfg.num_kv_heads:
        per_layer = 2 * (cfg.num_kv_heads // tp) * cfg.head_dim
    else:
        per_layer = 2 * cfg.head_dim  # a replica of one key-value head
    total_bits = per_layer * cfg.num_layers * context_len * bits
    return -(-total_bits // 8)''',
    "decode_answer": '''def decode_floor(facts, gpu, tp, context_len, batch_size):
    read = (2 * mk.dense_decoder_params(facts) + tp * batch_size * cache_per_gpu(facts.config, context_len, tp)) / tp
    seconds = read / gpu.hbm_bandwidth
    per_gpu = float(np.float64(batch_size) / seconds / tp)
    return float(seconds), per_gpu''',
    "experts_answer": '''def verification_experts(num_experts, top_k, k):
    p_hit = top_k / num_experts
    expected = sum(1 - (1 - p_hit) ** (k + 1) for _ in range(num_experts))
    return float(expected), float(expected) / top_k''',
    "best_k_answer": '''def best_draft_length(alpha, cost_ratio, max_k, verify_growth=0.0):
    def speedup(k):
        emitted = k + 1 if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
        return emitted / (k * cost_ratio + 1 + verify_growth * k)
    table = {k: speedup(k) for k in range(max_k + 1)}
    k = min(table, key=lambda j: (-table[j], j))
    return int(k), float(table[k])''',
    "gpus_answer": '''def gpus_for_rate(facts, gpu, tp, context_len, rate, output_tokens, tpot_target):
    w = 2 * mk.dense_decoder_params(facts) / tp
    c = cache_per_gpu(facts.config, context_len, tp)
    b = 0
    while (w + (b + 1) * c) / gpu.hbm_bandwidth <= tpot_target and w + (b + 1) * c <= gpu.hbm_bytes:
        b += 1
    step = (w + b * c) / gpu.hbm_bandwidth
    replicas = -(-rate * output_tokens * step // b)
    return int(replicas) * tp''',
}

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    ("honest_closed_forms_and_loops", HONEST_13, ("experts_answer", "print('experts, by hand:', 8 * 5)")),
]
