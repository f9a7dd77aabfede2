"""Section attention_backends-attention-weights: what eager output_attentions costs, and rows recomputed from the LSE."""
import json
import pathlib
import re

import numpy as np
import pytest

import mha_kit as mk

NB = pathlib.Path(__file__).resolve().parents[1] / "book" / "attention_backends.ipynb"
# Llama 3 8B config.json: 32 layers, 32 query heads, 8 KV heads of 128
LAYERS, HEADS, KV_HEADS, HEAD_DIM, N = 32, 32, 8, 128, 8192


def _glued():
    """Every glue(key, value) in the chapter's stored outputs, read from the display data."""
    out = {}
    for cell in json.loads(NB.read_text())["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            meta = o.get("metadata", {}).get("scrapbook", {})
            text = data.get("application/papermill.record/text/plain")
            if "name" in meta and text is not None:
                out[meta["name"]] = "".join(text).strip("'\"")
    return out


def test_weights_bytes_from_the_shape():
    per_layer = HEADS * N * N * 2  # (1, heads, n, n) in bf16
    assert per_layer == 4 * 2**30
    assert LAYERS * per_layer == 128 * 2**30
    assert f"{LAYERS * per_layer / 1e9:.0f}" == "137"
    kv = 2 * KV_HEADS * HEAD_DIM * 2 * LAYERS * N  # K and V, bf16, all layers
    assert kv == 2**30 and LAYERS * per_layer // kv == 128


def test_eager_transient_peak():
    # eager_attention_forward: masked scores (bf16), softmax in float32, its bf16 copy, all alive at once
    scores = HEADS * N * N
    assert scores * 2 + scores * 4 + scores * 2 == 16 * 2**30


def test_gap_to_the_kv_cache_grows_linearly():
    # weights / cache = (L * H * n^2 * 2) / (2 * L * H_kv * d_h * n * 2) = H * n / (2 * H_kv * d_h)
    for n, ratio in ((N, 128), (16 * N, 2048)):
        assert HEADS * n * n * 2 * LAYERS // (2 * KV_HEADS * HEAD_DIM * 2 * LAYERS * n) == ratio
        assert HEADS * n // (2 * KV_HEADS * HEAD_DIM) == ratio


def test_sink_logit_changes_the_row():
    # a learned sink logit in the denominator: the weights over real keys no longer sum to 1
    rng = np.random.default_rng(3)
    s = rng.standard_normal(9)
    sink = 1.5
    p = np.exp(s) / (np.exp(s).sum() + np.exp(sink))
    assert p.sum() < 1 and np.exp(s - np.log(np.exp(s).sum())).sum() == pytest.approx(1.0, abs=1e-12)
    assert p.sum() == pytest.approx(np.exp(s).sum() / (np.exp(s).sum() + np.exp(sink)), abs=1e-15)


def test_weights_exceed_an_h100():
    assert LAYERS * HEADS * N * N * 2 > 80e9


def test_mha_kit_agrees_with_the_shape():
    cfg = mk.MODEL_FACTS["llama-3-8b"].config
    assert (cfg.num_layers, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (LAYERS, HEADS, KV_HEADS, HEAD_DIM)


def test_row_from_cached_keys_and_lse():
    rng = np.random.default_rng(7)
    n, d = 12, 4
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    s = q @ k.T / np.sqrt(d)
    s[np.triu_indices(n, 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)  # the full matrix, plain numpy
    for i in range(n):
        row = q[i] @ k[: i + 1].T / np.sqrt(d)
        lse = np.log(np.exp(row).sum())
        assert np.exp(row - lse).sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(np.exp(row - lse), p[i, : i + 1], atol=1e-12)
    o, lse_kit = mk.attention_forward_lse(q, k, v, causal=True)
    np.testing.assert_allclose(o, p @ v, atol=1e-12)
    np.testing.assert_allclose(lse_kit, [np.log(np.exp(s[i, : i + 1]).sum()) for i in range(n)], atol=1e-12)


def test_glued_values():
    g = _glued()
    per_layer = HEADS * N * N * 2
    kv = 2 * KV_HEADS * HEAD_DIM * 2 * LAYERS * N
    expected = {"aw_n": f"{N:,}", "aw_layer_gib": str(per_layer // 2**30), "aw_all_gib": str(LAYERS * per_layer // 2**30),
                "aw_all_gb": str(round(LAYERS * per_layer / 1e9)), "aw_h100_gb": "80", "aw_kv_gib": str(kv // 2**30),
                "aw_kv_ratio": str(LAYERS * per_layer // kv), "aw_row": "11", "aw_ntok": "16",
                "aw_row_err": "below 1e-12", "aw_lse_sum": "1.000000", "aw_peak_gib": "16",
                "aw_n_long": f"{16 * N:,}", "aw_kv_ratio_long": f"{HEADS * 16 * N // (2 * KV_HEADS * HEAD_DIM):,}"}
    for key, value in expected.items():
        assert g.get(key) == value, key


def test_section_cites_its_sources():
    text = "".join("".join(c["source"]) for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "markdown")
    sec = text[text.index("(attention_backends-attention-weights)="):text.index("(attention_backends-platforms)=")]
    for key in ("qa_nowcoder_zebra", "vllm034noattnprobs", "vllm034logprobsfields", "hf525outputattentions",
                "dao2022flashattention", "dao2023flashattention2", "vllm034sparseindexer", "vllm034noattnprobsb",
                "vllm034maxlogprobs", "hf525capturedattentions", "vllm034extpoints"):
        assert key in sec, key
    flat = " ".join(sec.split())
    assert "wrong on every point" not in flat
    for phrase in ("--max-logprobs -1", "the default cap is 20", "never passes it to the kernel",
                   "`outputs.attentions` is an empty tuple", "FlexAttention on a GPU it holds each row's log-sum-exp",
                   "a decoder without MLA", "FlashInfer, Triton, FlexAttention", "`reduce_segments`",
                   "`AttentionInterface.register(\"rows\", fn)`"):
        assert phrase in flat, phrase
    assert re.search(r"\{doc\}`attention_sinks`", sec) and "{ref}`attention_sinks-gated-attention`" in sec
