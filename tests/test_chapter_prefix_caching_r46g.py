"""Section prefix_caching-growing-conversation: TTFT per turn with and without the history cached, and the
per-conversation against prefix-only trade-off.

Recomputes the prefill FLOPs of Llama 3 8B (config written out: 32 layers, d 4096, 32 query and 8 KV heads of
128, SwiGLU 14336, vocabulary 128256) by hand, not through mha_kit, at the H100 SXM's dense bf16 peak (989
TFLOP/s), and compares them with the cell's printed lines and glued values; then the prose's links.
"""
import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
LABEL = "prefix_caching-growing-conversation"
L, D, H, KV, HD, FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
PEAK = 989e12
M = 1_000
PROJ = D * H * HD + 2 * D * KV * HD + H * HD * D  # q, k, v, o
PER_TOKEN = L * (PROJ + 3 * D * FF)


def flops(cached, new):
    # weights over the new tokens, the last token's logits, and new token i attending to cached + i keys
    attention = sum(L * 4 * H * HD * (cached + i) for i in range(1, new + 1))
    return 2 * new * PER_TOKEN + 2 * V * D + attention


def test_ttft_rows():
    out = chapter_outputs.printed(NB, "conv_facts, conv_gpu")
    for turn in (1, 10, 25, 50):
        cold = 1e3 * flops(0, turn * M) / PEAK
        warm = 1e3 * flops((turn - 1) * M, M) / PEAK
        assert f"{turn:>5}{turn * M:>13,}{cold:>13.0f} ms{warm:>19.0f} ms" in out
        assert chapter_outputs.glued(NB, f"pc_conv_ttft_cold_{turn}") == f"{cold:.0f}"
        assert chapter_outputs.glued(NB, f"pc_conv_ttft_warm_{turn}") == f"{warm:.0f}"
    # uncached grows with the tokens sent; cached stays within a few times turn 1
    assert flops(0, 50 * M) / flops(0, M) > 90
    assert flops(49 * M, M) / flops(0, M) < 3
    assert chapter_outputs.glued(NB, "pc_conv_ttft_cold_50") == "1368"
    assert chapter_outputs.glued(NB, "pc_conv_ttft_warm_50") == "40"


def test_prose_and_links():
    text = chapter_outputs.section(NB, LABEL, end="prefix_caching-summarise")
    assert "time to first token of turn $n$" in text
    assert "Per-conversation reuse or prefix-only caching" in text
    labels = chapter_outputs.book_labels()
    for ref in ("deployment_plan-open-conversations", "scheduler_design-hosted-caching", "prefix_caching-routing",
                "prefix_caching-hashed", "prefix_caching-radix"):
        assert "{ref}`" + ref + "`" in text and ref in labels
    box = text[text.index("```{admonition} In the interview"):]
    assert "TTFT" in box and "open session" in box


def test_cached_ttft_slope():
    """Cached TTFT is not flat: it grows linearly, with a slope much smaller than uncached."""
    ms = [1e3 * flops(0, t * M) / PEAK for t in (1, 50)]
    warm = [1e3 * flops((t - 1) * M, M) / PEAK for t in (1, 50)]
    cold_slope, warm_slope = (ms[1] - ms[0]) / 49, (warm[1] - warm[0]) / 49
    assert chapter_outputs.glued(NB, "pc_conv_slope_cold") == f"{cold_slope:.0f}" == "28"
    assert chapter_outputs.glued(NB, "pc_conv_slope_warm") == f"{warm_slope:.1f}" == "0.5"
    assert chapter_outputs.glued(NB, "pc_conv_slope_ratio") == f"{cold_slope / warm_slope:.0f}"
    assert chapter_outputs.glued(NB, "pc_conv_warm_growth") == f"{warm[1] / warm[0]:.1f}" == "2.8"
    text = chapter_outputs.section(NB, LABEL, end="prefix_caching-summarise")
    assert "nearly flat" not in text and "same\nfraction of peak" in text and "byte for byte" in text
    chapter_outputs.assert_cited(text, ["vllmcacheconfig"])
