"""Sections multi_tenant_serving-mm-request-path and multi_tenant_serving-tenancy-design (r46h).

The request path: one 1080 x 1920 image with 200 text tokens into Qwen2-VL-7B on an H100 at its bf16 peak, at
the checkpoint's max_pixels and at the processor class's default. The image tokens come from transformers'
smart_resize written out (sides rounded to multiples of 28 px, area scaled into max_pixels, floor on the way
down; one token per 2 x 2 merge of 14-px patches plus the two vision markers); the encoder floor from the ViT's
675 million parameters over four patches a token, the prefill floor from the language model's 7.6 billion
(Qwen2-VL Table 1), the cache from 28 layers x 4 KV heads x 128 x 2 (K, V) x 2 bytes; the H100 SXM data sheet's
989 TFLOP/s. Not through mha_kit. The prose: a knob for every stage, and how a concurrency cap is counted.
"""
import math

import pytest

import chapter_outputs

NB = chapter_outputs.notebook("multi_tenant_serving")
H, W, TEXT = 1080, 1920, 200
CAPS = {"checkpoint": 12_845_056, "1,003,520": 14 * 14 * 4 * 1280}  # preprocessor_config.json; the class default
VIT, LM, PEAK = 675e6, 7.6e9, 989e12
LM_MATMUL = LM - 2 * 152_064 * 3_584  # less the embedding lookup and the output head (last position only)
VIT_WIDTH, VIT_BLOCKS = 1280, 32  # Qwen2-VL's ViT: full attention over an image's patches in every block
KV_PER_TOKEN = 28 * 4 * 128 * 2 * 2  # bytes


def image_tokens(max_pixels, factor=28):
    h, w = round(H / factor) * factor, round(W / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(H * W / max_pixels)
        h, w = math.floor(H / beta / factor) * factor, math.floor(W / beta / factor) * factor
    return h * w // factor**2 + 2


def floors(max_pixels):
    n = image_tokens(max_pixels)
    patches = 4 * (n - 2)
    weights = 2 * VIT * patches / PEAK
    attn = 2 * 2 * patches * patches * VIT_WIDTH * VIT_BLOCKS / PEAK  # QK^T then AV
    return n, weights, attn, 2 * LM_MATMUL * (n + TEXT) / PEAK, (n + TEXT) * KV_PER_TOKEN, patches


def test_image_tokens_at_both_caps():
    assert image_tokens(CAPS["checkpoint"]) == 39 * 69 + 2 == 2693
    assert image_tokens(CAPS["1,003,520"]) == 26 * 47 + 2 == 1224


def test_the_printed_table_and_glue():
    out = chapter_outputs.printed(NB, "RP_TEXT = 200").splitlines()
    assert out[0].split() == ["max_pixels", "image", "tokens", "enc", "weights", "enc", "attn", "encoder", "prefill",
                              "KV", "held"]
    rows = {}
    for line, name in zip(out[1:3], CAPS):
        n, w, a, pre, kv, patches = floors(CAPS[name])
        rows[name] = (n, w, a, w + a, pre, patches)
        assert line.split() == [*name.split(), f"{n:,}", f"{1e3 * w:.1f}", "ms", f"{1e3 * a:.1f}", "ms",
                                f"{1e3 * (w + a):.1f}", "ms", f"{1e3 * pre:.1f}", "ms", f"{kv / 2**20:.1f}", "MiB"]
    (n0, w0, a0, e0, p0, c0), (n1, _, _, e1, p1, _) = rows.values()
    assert out[3] == (f"lowering max_pixels: {n0 / n1:.1f}x fewer image tokens, encoder floor {e0 / e1:.1f}x lower, "
                      f"prefill floor {p0 / p1:.1f}x lower")
    assert out[4] == (f"at the checkpoint's cap: {c0:,} patches, attention {a0 * PEAK:.2e} FLOP against "
                      f"the weights' {w0 * PEAK:.2e}")
    for key, value in (("mt_rp_enc_hi", e0), ("mt_rp_enc_lo", e1), ("mt_rp_pre_hi", p0), ("mt_rp_pre_lo", p1),
                       ("mt_rp_attn_ms", a0), ("mt_rp_w_ms", w0)):
        assert chapter_outputs.glued(NB, key) == f"{1e3 * value:.1f}"
    for key, value in (("mt_rp_tok_ratio", n0 / n1), ("mt_rp_enc_ratio", e0 / e1), ("mt_rp_pre_ratio", p0 / p1)):
        assert chapter_outputs.glued(NB, key) == f"{value:.1f}"
    assert chapter_outputs.glued(NB, "mt_rp_patches") == f"{c0:,}" == "10,764"
    assert chapter_outputs.glued(NB, "mt_rp_lm_mm") == f"{LM_MATMUL / 1e9:.2f}"
    assert a0 > w0  # at the checkpoint's cap the ViT's attention outweighs its weights
    assert e0 / e1 > 1.2 * n0 / n1  # so the encoder falls faster than the token count
    assert p0 > 2 * p1 - 1e-3  # the prefill about halves
    assert chapter_outputs.glued(NB, "mt_epd_enc_ms") == f"{1e3 * w0:.0f}"  # the EPD section's weights-only figure


def mm_path():
    return chapter_outputs.section(NB, "multi_tenant_serving-mm-request-path", end="multi_tenant_serving-mm-limits")


@pytest.mark.parametrize("stage, knobs", [
    ("4. **Queue, schedule and encode.**", ("--max-num-queued-reqs", "--scheduling-policy priority", "max_pixels",
                                            "--max-num-batched-tokens", "--mm-encoder-tp-mode data")),
    ("5. **Prefill**", ("cache_salt", "--long-prefill-token-threshold", "FP8")),
    ("6. **Decode**", ("--max-num-seqs", "--kv-cache-dtype fp8", "--speculative-config", "--stream-interval")),
])
def test_every_gpu_stage_names_its_knobs(stage, knobs):
    text = mm_path()
    body = text[text.index(stage):].split("\n\n")[0]
    assert "*Knobs" in body
    for knob in knobs:
        assert knob in body, knob


def test_request_path_links_and_cites():
    text = mm_path()
    labels = chapter_outputs.book_labels()
    for ref in ("serving_reliability-queue-depth", "tensor_parallel-vit-dp",
                "multi_tenant_serving-encoder-disaggregation", "serving_operations-ttft-tpot-levers"):
        assert f"{{ref}}`{ref}`" in text and ref in labels, ref
    chapter_outputs.assert_cited(text, ["vllm034servingknobs", "wang2024qwen2vl", "hfqwen2vlvit", "vllmmmencodertp"])
    assert "`priority` field" in text  # the policy does nothing unless requests carry a priority
    for key in ("vllm034priority", "vllm034scheduler", "vllm034activeseqs"):
        assert f"`{key}`" in text


def test_tenancy_design_counts_and_releases_the_concurrency_cap():
    text = chapter_outputs.section(NB, "multi_tenant_serving-tenancy-design", end="multi_tenant_serving-spend-budgets")
    assert "{ref}`serving_reliability-token-rate-limits`" in text
    cap = text[text.index("**A concurrency cap**"):].split("\n* ")[0]
    for term in ("in flight", "incremented atomically at admission", "429", "decremented", "cancel",
                 "dropped stream", "`finally`", "expiry", "lease"):
        assert term in cap, term
    chapter_outputs.assert_cited(cap, ["litellmparallelv3"])
    for term in ("not yet ready for production", "only limit", "shared with", "increments before",
                 "atomic step"):
        assert term in cap, term
    assert "restarts it at 1 when its 60-second" not in cap  # true only when the parallel cap is the key's only limit
