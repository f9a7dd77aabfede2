"""Section continuous_batching-chunk-offset-cost of "Continuous batching and chunked prefill".

The FLOPs of a prompt chunk of c tokens after p cached ones, redone from Llama 3 8B's published shape, which Llama
3.1 8B keeps with a 131,072-token window (Llama 3 8B's is 8,192, too short for the long rows) (Meta's
config.json: 32 layers, width 4,096, 32 query heads and 8 KV heads of 128, SwiGLU width 14,336, vocabulary 128,256,
8,030,261,248 parameters): per layer the projections 2 d^2 + 2 d h_kv d_h weights and the feed-forward 3 d d_ff,
2 FLOPs per weight and token; the last token's logits 2 V d; attention 4 h d_h FLOPs per query-key pair, new token i
attending to p + i keys. Times at the H100 SXM's datasheet peak (989 TFLOPS dense bf16, 3.35 TB/s). Each number is
compared with the chapter's stored table and glued values.
"""
import pytest
import chapter_outputs

PARAMS, VOCAB, D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, D_FF = 8_030_261_248, 128_256, 4096, 32, 32, 8, 128, 14_336
PEAK, BANDWIDTH = 989e12, 3.35e12
CHUNK = 768  # DSStateManagerConfig.max_ragged_batch_size default
OFFSETS = (0, 4096, 16384, 32768, 65536)
CTX_LLAMA3, CTX_LLAMA31 = 8192, 131_072  # Meta's config.json max_position_embeddings, Llama 3 8B and Llama 3.1 8B

LINEAR_WEIGHTS = LAYERS * (2 * D * D + 2 * D * KV_HEADS * HEAD_DIM + 3 * D * D_FF)  # multiply each new token
LOGITS = 2 * VOCAB * D
PAIR = 4 * LAYERS * HEADS * HEAD_DIM  # one query against one key, every layer: score and value mix
WEIGHT_BYTES = 2 * PARAMS  # bf16, the embedding table included (it is read)
KV_BYTES = 2 * 2 * LAYERS * KV_HEADS * HEAD_DIM  # K and V, bf16, per token


def flops(p, c):
    return 2 * LINEAR_WEIGHTS * c + LOGITS + PAIR * (c * p + c * (c + 1) // 2)


def read_seconds(p, c):
    return (WEIGHT_BYTES + KV_BYTES * (p + c)) / BANDWIDTH


def equal_flop_chunk(p):
    # largest c with flops(p, c) <= flops(0, 768), by the quadratic's root then checked on the integers
    a, b, target = PAIR / 2, 2 * LINEAR_WEIGHTS + PAIR * (p + 0.5), flops(0, CHUNK) - LOGITS
    c = int((-b + (b * b + 4 * a * target) ** 0.5) / (2 * a))
    while flops(p, c + 1) <= flops(0, CHUNK):
        c += 1
    while flops(p, c) > flops(0, CHUNK):
        c -= 1
    return c


def ms(seconds):
    return f"{1e3 * seconds:,.1f}"


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("continuous_batching")


def test_constants():
    assert 2 * LINEAR_WEIGHTS == 13_958_643_712  # 13.96 GFLOP a token: no output head on unsampled tokens
    assert PAIR == 524_288 and 2 * LINEAR_WEIGHTS // PAIR == 26_624


@pytest.mark.parametrize("p", OFFSETS)
def test_table_rows(nb, p):
    f, base = flops(p, CHUNK), flops(0, CHUNK)
    attention = PAIR * (CHUNK * p + CHUNK * (CHUNK + 1) // 2)
    share = f"{100 * attention / f:.1f}%"
    row = (f"{p:>7,}{f / 1e12:>8.1f}{f / base:>11.2f}x{share:>11}{ms(f / PEAK):>11}{ms(read_seconds(p, CHUNK)):>11}"
           f"{equal_flop_chunk(p):>18,}")
    assert row in chapter_outputs.printed(nb, "def equal_flop_chunk"), row
    assert chapter_outputs.glued(nb, f"cb_off_{p}_ratio") == f"{f / base:.2f}"
    assert chapter_outputs.glued(nb, f"cb_off_{p}_ms") == ms(f / PEAK)
    assert chapter_outputs.glued(nb, f"cb_off_{p}_chunk") == f"{equal_flop_chunk(p):,}"
    assert chapter_outputs.glued(nb, f"cb_off_{p}_attn") == share
    assert f / PEAK > read_seconds(p, CHUNK)  # the prose: every row compute-bound on an H100


def test_claims(nb):
    assert f"{flops(32768, CHUNK) / flops(0, CHUNK):.2f}" == "2.21"  # about twice the cost at 32K
    assert [equal_flop_chunk(p) for p in OFFSETS] == [768, 667, 479, 348, 224]
    cross = (flops(0, CHUNK) - PAIR * CHUNK * (CHUNK + 1) // 2) / (PAIR * CHUNK) - (CHUNK + 1) / 2
    assert abs(PAIR * (CHUNK * cross + CHUNK * (CHUNK + 1) / 2) - (2 * LINEAR_WEIGHTS * CHUNK + LOGITS)) < 1
    assert chapter_outputs.glued(nb, "cb_off_cross") == f"{cross:,.0f}" == "26,242"
    head = 2 * (PARAMS - VOCAB * D) / PAIR - (CHUNK + 1) / 2  # output head counted on every token
    assert chapter_outputs.glued(nb, "cb_off_cross_head") == f"{head:,.0f}" == "28,245"
    assert chapter_outputs.glued(nb, "cb_off_per_key") == "524,288"
    # chunking adds no FLOPs: the attention terms of the chunks sum to the one-pass prompt's
    starts = range(0, 65536, CHUNK)
    pairs = sum(min(CHUNK, 65536 - s) * s + min(CHUNK, 65536 - s) * (min(CHUNK, 65536 - s) + 1) // 2 for s in starts)
    assert pairs == 65536 * 65537 // 2
    assert chapter_outputs.glued(nb, "cb_off_nchunks") == str(len(starts)) == "86"
    out = chapter_outputs.printed(nb, "def equal_flop_chunk")
    assert "add up to its one-pass prefill: True" in out
    assert f"last full chunk / first: {flops(84 * CHUNK, CHUNK) / flops(0, CHUNK):.2f}x" in out


def whole_prompt(cut, prompt=65536):
    offset, times = 0, []
    while offset < prompt:
        c = min(cut(offset), prompt - offset)
        times.append(max(flops(offset, c) / PEAK, read_seconds(offset, c)))
        offset += c
    return len(times), sum(times), max(times)


def test_whole_prompt(nb):
    out = chapter_outputs.printed(nb, "def prompt_passes")
    results = {}
    for name, key, cut in (("768 tokens", "tok", lambda p: CHUNK), ("equal FLOPs", "flop", equal_flop_chunk)):
        n, total, longest = results[key] = whole_prompt(cut)
        assert f"{name:<12} {n:>4} passes, {ms(total)} ms in all, longest pass {ms(longest)} ms" in out
        assert chapter_outputs.glued(nb, f"cb_off_{key}_passes") == str(n)
        assert chapter_outputs.glued(nb, f"cb_off_{key}_total") == ms(total)
        assert chapter_outputs.glued(nb, f"cb_off_{key}_longest") == ms(longest)
    assert results["tok"][0] == 86 and results["flop"][0] > 2 * 86
    assert abs(results["tok"][1] - results["flop"][1]) < 1e-3  # the same time in all, to within the extra logits
    assert results["flop"][2] < results["tok"][2] / 3


def test_model_window_and_logits(nb):
    # the offsets and the 65,536-token prompt fit Llama 3.1 8B's window, not Llama 3 8B's
    assert max(OFFSETS) + CHUNK <= CTX_LLAMA31 and max(OFFSETS) > CTX_LLAMA3
    assert chapter_outputs.glued(nb, "cb_off_ctx") == f"{CTX_LLAMA31:,}"
    assert chapter_outputs.glued(nb, "cb_off_ctx_l3") == f"{CTX_LLAMA3:,}"
    assert chapter_outputs.printed(nb, "def equal_flop_chunk").startswith("Llama 3.1 8B:")
    # the one token's logits counted on every chunk, a share of a 768-token chunk at offset 0
    assert chapter_outputs.glued(nb, "cb_off_logit_share") == f"{LOGITS / flops(0, CHUNK):.2%}" == "0.01%"


def test_section_text(nb):
    text = chapter_outputs.section(nb, "continuous_batching-chunk-offset-cost", "continuous_batching-lmdeploy-prefill")
    assert text.startswith("(continuous_batching-chunk-offset-cost)=\n### ")
    for key in ("dsmii346", "dsfastgen_blog{§3A, insight 1}", "dsfastgen_blog{§3A, insight 3}",
                "agrawal2024sarathi{§4.3}", "miiraggedbatching{lines 256-363}", "dsfastgen_blog{§3A, insight 2}",
                "llama3{Table 3}", "llama3{§3.4.2}", "vllm034scheduler", "Llama 3.1 8B"):
        assert key in text, key
    for ref in ("continuous_batching-step", "continuous_batching-dynamic-splitfuse", "continuous_batching-loop"):
        assert f"{{ref}}`{ref}`" in text, ref
    assert "mk.prefix_prefill_flops" in text and ":class: dropdown followup" in text
    assert "In the interview" in text
    assert "on Llama 3 8B" not in text and "For Llama 3 8B" not in text  # the long offsets need the 128K window
    assert "224-token chunk" in text and equal_flop_chunk(65536) == 224  # the prose's hard-coded number
    # the section sits inside Dynamic SplitFuse, before LMDeploy's subsection
    whole = chapter_outputs.section(nb, "continuous_batching-dynamic-splitfuse")
    assert "(continuous_batching-chunk-offset-cost)=" in whole and "(continuous_batching-lmdeploy-prefill)=" in whole
