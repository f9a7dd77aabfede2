"""Section transformer_block-llama-glm-bloom: shapes and token counts of LLaMA-1 65B (LLaMA Table 2, Llama 2
Table 1), GLM-130B (THUDM/GLM-130B configs/model_glm_130b.sh and README) and BLOOM 176B (bigscience
tr11-176B-ml README), recomputed from those constants and compared with the chapter's stored output."""
import json
import pathlib
import re

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "transformer_block.ipynb"

# name: (layers, heads, d_model, vocab, context, training tokens, parameters)
MODELS = {
    "LLaMA-1 65B": (80, 64, 8192, 32_000, 2048, 1_400 * 10**9, 65.2e9),
    "GLM-130B": (70, 96, 12288, 150_528, 2048, 400 * 10**9, 130e9),
    "BLOOM 176B": (70, 112, 14336, 250_680, 2048, 366 * 10**9, 176e9),  # tokens seen (HF model card v1.3)
}
BLOOM_PUBLISHED_PARAMS = 176_247_271_424  # the bigscience/bloom model card's exact count
GQA8_KV_BYTES = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads of 128, 2 bytes


def _stdout():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if "OLD = {" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def test_bloom_params_from_its_shape():
    layers, _, d, _, _, _, _ = MODELS["BLOOM 176B"]
    total = layers * (12 * d * d + 13 * d) + 250_880 * d + 4 * d
    assert total == BLOOM_PUBLISHED_PARAMS
    assert f"BLOOM from its shape: {total:,} parameters, embedding {250_880 * d:,}" in _stdout()


def test_glm_weights_near_130b():
    layers, _, d, vocab, _, _, _ = MODELS["GLM-130B"]
    total = layers * (4 * d * d + 3 * d * 32_768) + vocab * d
    assert 125e9 < total < 132e9
    assert f"GLM-130B from its shape (weights only): {total / 1e9:.1f}B" in _stdout()


@pytest.mark.parametrize("name", list(MODELS))
def test_rows(name):
    layers, heads, d, vocab, ctx, tokens, params = MODELS[name]
    kv = 2 * layers * d * 2
    row = next(line for line in _stdout().splitlines() if line.startswith(name) and "from its shape" not in line)
    cols = row[len(name):].split()
    assert int(cols[0]) == layers and int(cols[1]) == heads
    assert int(cols[2].replace(",", "")) == d and int(cols[3]) == d // heads == 128
    assert int(cols[4].replace(",", "")) == vocab and int(cols[5].replace(",", "")) == ctx
    assert float(cols[7]) == pytest.approx(tokens / params, abs=0.05)
    assert int(cols[8].replace(",", "")) == kv


def test_chinchilla_gap_and_gqa_ratio():
    out = _stdout()
    ratio = 20 / (366e9 / 176e9)
    assert round(ratio) == 10
    assert f"{round(ratio)}x what it saw" in out
    assert 2 * 80 * 8192 * 2 // GQA8_KV_BYTES == 8
    assert f": 8x ({GQA8_KV_BYTES:,} B/token)" in out


def test_under_trained_order():
    per_param = {n: m[5] / m[6] for n, m in MODELS.items()}
    assert per_param["BLOOM 176B"] < per_param["GLM-130B"] < 20 < per_param["LLaMA-1 65B"]
    assert re.search(r"LLaMA 7B 149 and Llama 2 70B 28\.6", _stdout())


def test_deepnorm_and_glm_objective():
    n = 2 * MODELS["GLM-130B"][0]  # DeepNorm's 2N, N = 70 layers (GLM-130B paper Sec. 2.1)
    alpha, beta = n ** 0.5, n ** -0.5
    assert alpha * beta == pytest.approx(1.0)
    mip_tokens = 0.05 * MODELS["GLM-130B"][5]  # MIP is 5% of the tokens (Sec. 2.2)
    assert (f"DeepNorm at N = 70: alpha = {alpha:.1f}, beta = {beta:.3f}; "
            f"GLM-130B MIP 5% of 400B = {mip_tokens / 1e9:.0f}B tokens") in _stdout()


def test_llama_against_chinchilla():
    llama65 = MODELS["LLaMA-1 65B"][5] / MODELS["LLaMA-1 65B"][6] / 20
    llama7 = 1.0e12 / 6.7e9 / 20
    assert 1.0 < llama65 < 1.1 and llama7 > 7
    assert f"LLaMA 65B at {llama65:.2f}x Chinchilla's ratio, 7B at {llama7:.1f}x" in _stdout()
