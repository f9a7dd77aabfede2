"""Section serving_reliability-oom-in-flight of "Overload, failures and rollouts": a full KV pool against a CUDA OOM.

The cost of the two outcomes is recomputed without mha_kit: the prefill FLOPs of Llama 3 8B from its published
shapes (meta-llama/llama-models: d=4096, 32 layers, 32 query heads of 128, 8 KV heads, FFN 14,336, vocabulary
128,256), every weight matrix once per token, the last token's logits and causal attention, at the H100 SXM
data sheet's 989 TFLOP/s dense bf16. The section's statements about each engine are checked against the strings
the sources print (vLLM core.py and exceptions.py, SGLang scheduler.py), and the outcomes table against the
records stated here.
"""
import chapter_outputs

NB = chapter_outputs.notebook("serving_reliability")
LABEL = "serving_reliability-oom-in-flight"
D, LAYERS, HEADS, HEAD_DIM, KV_WIDTH, FFN, VOCAB = 4096, 32, 32, 128, 8 * 128, 14336, 128_256
PEAK = 989e12
REQS, PROMPT, DONE = 64, 2000, 250

OUTCOMES = (  # event, engine, what the requests in flight see (start of the cell)
    ("KV pool short", "vLLM", "one request preempted"),
    ("KV pool short", "SGLang", "requests retracted to the waiting queue"),
    ("KV pool short", "TensorRT-LLM (`GUARANTEED_NO_EVICT`)", "nothing: new requests wait at admission"),
    ("CUDA OOM in a step", "vLLM V1", "every request fails with `EngineDeadError`"),
)


def prefill_seconds(n):
    per_token = LAYERS * (2 * D * D + 2 * D * KV_WIDTH + 3 * D * FFN)
    attention = LAYERS * 2 * HEADS * HEAD_DIM * n * (n + 1)
    return (2 * n * per_token + 2 * VOCAB * D + attention) / PEAK


def text():
    return chapter_outputs.section(NB, LABEL, end="serving_reliability-async-jobs")


def test_costs():
    out = chapter_outputs.printed(NB, "oom_reqs, oom_prompt").splitlines()
    one = prefill_seconds(PROMPT + DONE)
    retry = REQS * prefill_seconds(PROMPT)
    assert out[0] == (f"pool short, one request preempted: {PROMPT + DONE:,} tokens recomputed, "
                      f"{1e3 * one:.0f} ms of prefill; the other {REQS - 1} continue")
    assert out[1] == (f"CUDA OOM, engine dead: {REQS} requests failed, {REQS * PROMPT:,} prompt tokens prefilled again "
                      f"elsewhere ({retry:.2f} s of an H100 at peak), {REQS * DONE:,} streamed tokens generated again")
    glue = chapter_outputs.cell_glue(NB, "oom_reqs, oom_prompt")
    assert glue == {"oom_preempt_ms": f"{1e3 * one:.0f}", "oom_retry_s": f"{retry:.2f}", "oom_regen": f"{REQS * DONE:,}"}
    assert retry / one > 50  # a death costs the fleet far more than a preemption costs one request


def test_outcomes_table():
    rows = [line for line in text().splitlines() if line.startswith("| ") and not line.startswith("| Event")]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows if not set(r) <= set("|- ")]
    assert [(c[0], c[1]) for c in cells] == [(e, g) for e, g, _ in OUTCOMES]
    for c, (_, _, seen) in zip(cells, OUTCOMES):
        assert c[2].startswith(seen), c


def test_source_strings_and_links():
    t = text()
    for s in ("EngineCore encountered a fatal error.", "ENGINE_CORE_DEAD",
              "EngineCore encountered an issue. See\n  stack trace (above) for the root cause.",
              "KV cache pool is full. Retract requests.", "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH", "GUARANTEED_NO_EVICT",
              "failed (engine dead).", "Error in chat completion stream generator.", "data: [DONE]"):
        assert s in t, s
    for key in ("vllmenginecorefatal", "vllmenginedead", "vllmenginedeadfrontend", "sglangretract", "trtllmscheduler",
                "vllmstreamerror"):
        assert "`" + key in t, key
    for ref in ("serving_reliability-gpu-failure", "serving_reliability-query-of-death", "serving_kv_cache-three-engines",
                "scheduler_design-preemption"):
        assert "{ref}`" + ref + "`" in t, ref
    assert "at most {glue:text}`oom_preempt_ms` ms" in t and "this section did not trace" not in t
    assert "In the interview" in t and t.count(":class: dropdown") == 3 and "[E] Drill:" in t
