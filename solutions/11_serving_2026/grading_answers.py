"""Designed answers of 11_serving_2026 for the grading tests (read by ``tests/grading_support.py``).

The course's file, not the learner's: never released, never in the folder the grading kernel runs
in (``nbgrader_config.py`` ignores ``grading_*.py``). Formats in ``tests/grading_support.py``.
"""

#: Plausible wrong answers: (name, answer grade_id, old text, new text, test cells that must score
#: zero). Every other test cell must keep full marks. Each is caught by a visible case.
WRONG_ANSWERS = [
    # the closed form alone: ZeroDivisionError for the draft that always agrees (visible alpha = 1)
    ("tokens_divide_by_zero_at_alpha_one", "expected_tokens_answer",
     "    if alpha == 1:\n        return float(k + 1)  # every draft passes, then the bonus token\n", "",
     {"expected_tokens_alpha_and_k"}),
    # k positions instead of k + 1: right at alpha = 1 (the branch), wrong at alpha = 0.8
    ("tokens_one_position_short", "expected_tokens_answer", "alpha ** (k + 1)", "alpha ** k",
     {"expected_tokens_alpha_and_k"}),
    # every draft checked and the target's token added: right at alpha = 1 (the branch), too many at 0.8
    ("tokens_linear_in_k", "expected_tokens_answer", "return (1 - alpha ** (k + 1)) / (1 - alpha)",
     "return 1 + k * alpha", {"expected_tokens_alpha_and_k"}),
    # a fully cached prompt of whole blocks reuses all of them (visible request 4)
    ("reuse_without_last_token", "block_reuse_answer",
     "min(matched, len(prompt) - 1) // block_size * block_size", "matched", {"block_reuse_stream_of_seven"}),
    # caps at len - 1 tokens but keeps the part of a block before the last token (visible request 4)
    ("reuse_counts_partial_block", "block_reuse_answer",
     "min(matched, len(prompt) - 1) // block_size * block_size", "min(matched, len(prompt) - 1)",
     {"block_reuse_stream_of_seven"}),
    # blocks keyed by their own tokens: a block after another prefix matches (visible request 3)
    ("reuse_blocks_not_leading", "block_reuse_answer", "return tuple(tokens[:end])",
     "return tuple(tokens[end - block_size:end])", {"block_reuse_stream_of_seven"}),
    # caches the last sampled token too: request 6 finds 12 tokens of request 1 where the engines find 8
    ("reuse_caches_the_sampled_token", "block_reuse_answer", "list(output)[:-1]", "list(output)",
     {"block_reuse_stream_of_seven"}),
    # the prompt only: request 7, the next turn after request 2, finds 8 tokens where its answer gives 12
    ("reuse_leaves_out_outputs", "block_reuse_answer", "list(prompt) + list(output)[:-1]", "list(prompt)",
     {"block_reuse_stream_of_seven"}),
    ("fp8_two_bytes_per_number", "fp8_batch_answer", "per_sequence = numbers  # FP8: one byte per number",
     "per_sequence = 2 * numbers", {"fp8_batch_llama3_70b_8_h100"}),
    ("fp8_query_heads", "fp8_batch_answer", "2 * cfg.num_kv_heads * cfg.head_dim", "2 * cfg.num_heads * cfg.head_dim",
     {"fp8_batch_llama3_70b_8_h100"}),
    # right for the 256-token prompt (memory-bound), half the compute time for 2,048 tokens
    ("ttft_one_flop_per_weight", "ttft_answer", "compute = 2 * multiplied", "compute = multiplied",
     {"ttft_llama3_8b_h100"}),
    ("ttft_adds_the_two_times", "ttft_answer", "return max(memory, compute)", "return memory + compute",
     {"ttft_llama3_8b_h100"}),
    # the keys and values written left out: 0.2% short at 256 tokens, where memory sets the pace
    ("ttft_leaves_out_the_writes", "ttft_answer", "(2 * params + written) / gpu.hbm_bandwidth",
     "2 * params / gpu.hbm_bandwidth", {"ttft_llama3_8b_h100"}),
    # both embedding tables taken as looked up: the output head's FLOPs are missing (visible 2,048 tokens)
    ("ttft_output_head_looked_up", "ttft_answer", "params - facts.vocab_size * facts.config.d_model",
     "params - 2 * facts.vocab_size * facts.config.d_model", {"ttft_llama3_8b_h100"}),
    ("handoff_gbit_read_as_gbyte", "handoff_answer", "link_gbit_per_s * 1e9 / 8", "link_gbit_per_s * 1e9",
     {"handoff_llama3_70b_infiniband"}),
    # E4M3 taken for the MI300 variant: amax / 240 (float8_e4m3fnuz's largest number)
    ("fp8_scale_uses_fnuz_max", "fp8_scales_answer", "/ 448", "/ 240", {"fp8_scales_outlier_channel"}),
    ("fp8_scale_uses_e5m2_max", "fp8_scales_answer", "/ 448", "/ 57344", {"fp8_scales_outlier_channel"}),
    # the per-tensor scale taken per channel: an array of d_h scales where one number belongs
    ("fp8_tensor_scale_per_channel", "fp8_scales_answer", "tensor_scale = np.abs(x).max() / 448",
     "tensor_scale = np.abs(x).max(axis=(0, 1)) / 448", {"fp8_scales_outlier_channel"}),
    ("fp8_token_scales_per_channel", "fp8_scales_answer", "axis=-1", "axis=-2", {"fp8_scales_outlier_channel"}),
    # one scale per token over all heads (visible h_kv = 3): the heads share their largest number
    ("fp8_token_scale_across_heads", "fp8_scales_answer", "axis=-1, keepdims=True", "axis=(0, 2), keepdims=True",
     {"fp8_scales_outlier_channel"}),
    ("fp8_never_rounded", "fp8_scales_answer", 'mk.round_minifloat(x / scale, "e4m3") * scale', "x / scale * scale",
     {"fp8_scales_outlier_channel"}),
    ("fp8_scale_bytes_bf16", "fp8_scales_answer", "4 * token_scales.size", "2 * token_scales.size",
     {"fp8_scales_outlier_channel"}),
    # chunks of the whole budget: 3 steps of 2,048 + 64 tokens where 4 of 1,984 + 64 run (visible budget 2,048)
    ("chunk_ignores_decodes", "chunked_prefill_answer", "min(left, token_budget - decoding)", "min(left, token_budget)",
     {"chunked_prefill_document"}),
    ("chunk_step_without_decodes", "chunked_prefill_answer", "(chunk + decoding) * token_s", "chunk * token_s",
     {"chunked_prefill_document"}),
    ("chunk_step_adds_times", "chunked_prefill_answer", "max(weights_s, (chunk + decoding) * token_s)",
     "weights_s + (chunk + decoding) * token_s", {"chunked_prefill_document"}),
    # no floor: the 48-token last chunk (budget 2,048) and every 256-token step cost less than the weights' read
    ("chunk_step_without_weights", "chunked_prefill_answer", "max(weights_s, (chunk + decoding) * token_s)",
     "(chunk + decoding) * token_s", {"chunked_prefill_document"}),
    # the whole prefill as the decodes' gap: what a step of the whole prompt would cost them
    ("chunk_worst_is_whole_prefill", "chunked_prefill_answer", "worst = max(worst, step)", "worst += step",
     {"chunked_prefill_document"}),
]

#: {answer grade_id: source}: answers that only call the mha_kit reference the question asks the
#: learner to write (or, with no single reference, the closest one-line use of forbidden mha_kit
#: code). Graded with the graded kit, each earns nothing for the test cells it feeds.
REFERENCE_CALLS = {
    "expected_tokens_answer": "def expected_tokens(alpha, k):\n    return mk.speculative_expected_tokens(alpha, k)",
    "block_reuse_answer": "def block_reuse(requests, block_size):\n"
                          "    return mk.serve_stream(mk.PrefixBlockCache(block_size, 10**6), requests)",
    "fp8_batch_answer": "def fp8_batch(cfg, context_len, free_bytes):\n"
                        "    per_sequence = mk.kv_cache_bytes(cfg, context_len, fmt='fp8_e4m3')\n"
                        "    return per_sequence, free_bytes // per_sequence",
    "ttft_answer": "def ttft_seconds(facts, gpu, prompt_tokens):\n"
                   "    return mk.roofline_step(facts, gpu)(prompt_tokens, 0, 0)",
    "handoff_answer": "def handoff_seconds(cfg, prompt_tokens, link_gbit_per_s, bits=16):\n"
                      "    return mk.kv_transfer_seconds(cfg, prompt_tokens, link_gbit_per_s * 1e9 / 8, bits)",
    "fp8_scales_answer": "def fp8_scales(x):\n"
                         "    (tensor, scale), (token, _) = mk.quantize_e4m3(x, 'tensor'), mk.quantize_e4m3(x, 'token')\n"
                         "    return (scale.item(), float(np.abs(tensor - x).max()), float(np.abs(token - x).max()),\n"
                         "            4 * mk.kv_scale_count(x.shape, 'token'))",
    "chunked_prefill_answer": "def chunked_prefill(prompt_tokens, decoding, token_budget, weights_s, token_s):\n"
                              "    def step(p, d, c):\n"
                              "        return max(weights_s, (p + d) * token_s)\n"
                              "    requests = [(0.0, 1, prompt_tokens + 2)] * decoding + [(step(decoding, 0, 0), prompt_tokens, 1)]\n"
                              "    latencies = mk.simulate_batching(requests, step, token_budget)\n"
                              "    return latencies[-1].ttft, mk.summarize_latencies(latencies).worst_itl",
}

#: {answer grade_id: why}: the answers with no forbidden reference at all; each is arithmetic (or a
#: choice) on what the graded kit allows, which has no function that answers it.
NO_REFERENCE = {}

HONEST_11 = {
    # a sum over positions instead of the closed form, with type hints
    "expected_tokens_answer": '''def expected_tokens(alpha: float, k: int) -> float:
    """Position i of the step is reached when the i drafts before it all pass."""
    return float(sum(alpha ** i for i in range(k + 1)))''',
    # a longest-prefix walk over a dict of cached block contents, one dict per depth
    "block_reuse_answer": '''from collections import namedtuple

Reuse = namedtuple("Reuse", "prompt_tokens reused")


def block_reuse(requests, block_size):
    """Prompt tokens each request reuses."""
    children = {}  # (parent node id, block tokens) -> node id: a tree of full blocks
    out = []
    for prompt, output in requests:
        node, depth, usable = 0, 0, (len(prompt) - 1) // block_size
        while depth < usable and (node, tuple(prompt[depth * block_size:(depth + 1) * block_size])) in children:
            node = children[node, tuple(prompt[depth * block_size:(depth + 1) * block_size])]
            depth += 1
        out.append(Reuse(len(prompt), depth * block_size).reused)
        sequence, node = [*prompt, *output[:-1]], 0  # the last output token never ran: no keys or values
        for start in range(0, len(sequence) - block_size + 1, block_size):
            node = children.setdefault((node, tuple(sequence[start:start + block_size])), len(children) + 1)
    return out''',
    # a namedtuple result (sent as a tuple), numpy ints turned into plain ints
    "fp8_batch_answer": '''from collections import namedtuple

Fit = namedtuple("Fit", "bytes_per_sequence sequences")


def fp8_batch(cfg, context_len, free_bytes):
    per_token = int(np.prod([2, cfg.num_layers, cfg.num_kv_heads, cfg.head_dim]))  # one byte each
    per_sequence = per_token * context_len
    return Fit(per_sequence, int(free_bytes) // per_sequence)''',
    # the roofline helper every assignment may use, in milliseconds first
    "ttft_answer": '''def ttft_seconds(facts, gpu, prompt_tokens):
    weights, cfg = mk.dense_decoder_params(facts), facts.config
    kv_per_token = 2 * cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim  # bytes: K and V in bf16
    flops = 2 * (weights - facts.vocab_size * facts.config.d_model) * prompt_tokens
    nbytes = 2 * weights + kv_per_token * prompt_tokens
    ms = 1e3 * mk.roofline.roofline_seconds(nbytes, flops, gpu.hbm_bandwidth, gpu.bf16_flops)
    return ms / 1e3''',
    # bits over bits per second, with math.ceil on an exact integer division
    "handoff_answer": '''import math


def handoff_seconds(cfg, prompt_tokens, link_gbit_per_s, bits=16):
    cache_bits = 8 * math.ceil(prompt_tokens * cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim * bits / 8)
    return cache_bits / (link_gbit_per_s * 10**9)''',
    # loops over heads and tokens for the per-token scales, np.max and a named constant
    "fp8_scales_answer": '''E4M3_MAX = 448.0  # (2 - 2**-2) * 2**(15 - 7): the top exponent's largest mantissa that is not NaN


def fp8_scales(x):
    def largest_error(scales):
        return float(np.max(np.abs(mk.round_minifloat(x / scales, "e4m3") * scales - x)))

    per_token = np.empty(x.shape[:-1] + (1,))
    for head in range(x.shape[0]):
        for token in range(x.shape[1]):
            per_token[head, token, 0] = np.max(np.abs(x[head, token])) / E4M3_MAX
    tensor = float(np.max(np.abs(x))) / E4M3_MAX
    return tensor, largest_error(tensor), largest_error(per_token), 4 * x.shape[0] * x.shape[1]''',
    # the steps counted with divmod instead of a loop: full chunks, then the rest
    "chunked_prefill_answer": '''import math


def chunked_prefill(prompt_tokens, decoding, token_budget, weights_s, token_s):
    full, rest = divmod(prompt_tokens, token_budget - decoding)
    steps = [max(weights_s, token_budget * token_s)] * full
    if rest:
        steps.append(max(weights_s, (rest + decoding) * token_s))
    return math.fsum(steps), max(steps)''',
}

#: Honest answers written in other ways than the solution's: (name, {answer grade_id: new source},
#: (answer grade_id, source of an extra cell after it) or None); each must score full marks.
HONEST = [
    # numpy counts: a tuple of numpy.int64 and a list of them (issue 36: numpy ints are counts too)
    ("honest_numpy_counts", {"fp8_batch_answer": '''def fp8_batch(cfg, context_len, free_bytes):
    per_sequence = np.int64(context_len) * cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim
    return per_sequence, np.int64(free_bytes) // per_sequence'''}, None),
    ("honest_other_ways", HONEST_11, ("block_reuse_answer", "print(block_reuse([([1, 2, 3], [4])], 2))")),
    # a right answer that makes numpy warn: the warning is a note, never a failure (issue 24)
    ("where_warns_at_alpha_one", {"expected_tokens_answer": '''def expected_tokens(alpha, k):
    a = np.float64(alpha)
    return float(np.where(a == 1, k + 1, (1 - a ** (k + 1)) / (1 - a)))'''}, None),
]


#: {designed wrong answer: the diagnosis its visible test gives}: a name of the catalogue
#: (mha_course.judge.diagnoses.CATALOGUE), or words of a message of this assignment's own
#: (tests/test_feedback_catalogue.py).
DIAGNOSES = {
    "tokens_divide_by_zero_at_alpha_one": "ZeroDivisionError",
    "tokens_one_position_short": "one position short",
    "tokens_linear_in_k": "1 + k * alpha checks every draft",
    "reuse_without_last_token": "the last prompt token is always computed again",
    "reuse_counts_partial_block": "reuse comes in whole blocks",
    "reuse_blocks_not_leading": "a block matches only after the same prefix",
    "reuse_caches_the_sampled_token": "the last output token was sampled, never run",
    "reuse_leaves_out_outputs": "a finished request leaves the blocks of its output in the cache too",
    "fp8_two_bytes_per_number": "FP8 stores one byte per number",
    "fp8_query_heads": "h_vs_h_kv",
    "ttft_one_flop_per_weight": "a multiply-add is 2 FLOPs",
    "ttft_adds_the_two_times": "the longer of the two times, not their sum",
    "ttft_leaves_out_the_writes": "the step also writes every prompt token's keys and values",
    "ttft_output_head_looked_up": "the output head is multiplied, not looked up",
    "handoff_gbit_read_as_gbyte": "a link rated in Gb/s moves gigabits",
    "fp8_scale_uses_fnuz_max": "240 ends float8_e4m3fnuz (MI300-class GPUs)",
    "fp8_scale_uses_e5m2_max": "57,344 is E5M2's largest number",
    "fp8_tensor_scale_per_channel": "expected one number for all of x",
    "fp8_token_scales_per_channel": "per channel, not per token (the last axis)",
    "fp8_token_scale_across_heads": "its own d_h numbers in its own head (the last axis)",
    "fp8_never_rounded": "the numbers were never rounded to E4M3",
    "fp8_scale_bytes_bf16": "a scale is an fp32 number: 4 bytes",
    "chunk_ignores_decodes": "the decodes take their tokens first",
    "chunk_step_without_decodes": "a step also computes one token of each running decode",
    "chunk_step_adds_times": "the longer of the two times, not their sum",
    "chunk_step_without_weights": "a step below the knee still reads every weight",
    "chunk_worst_is_whole_prefill": "waits one step for its next token",
}
