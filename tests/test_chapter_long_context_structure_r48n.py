"""Section long_context_structure-rag-ft-long of "Sparse patterns and long-context evaluation".

The per-request bill of fine-tuning, retrieval and long context for Llama 3 8B on one H100 in bf16, rebuilt
here from the model's shapes (config.json: 32 layers, d 4096, 32 query heads and 8 KV heads of 128, d_ff
14,336, vocabulary 128,256, untied embeddings) and the H100 SXM datasheet (80 GB, 3.35 TB/s, 989 TFLOPS
bf16 dense), as roofline floors written out by hand rather than through mk.plan_deployment; the corpus in
windows of 2^17 tokens; and a rank-16 LoRA adapter on q, k, v and o (Hu et al. 2022, sec. 4.1).
"""
import pytest

import chapter_outputs

LABEL = "long_context_structure-rag-ft-long"
L, D, H, H_KV, D_H, D_FF, V = 32, 4096, 32, 8, 128, 14_336, 128_256
HBM_BYTES, HBM_BW, PEAK = 80e9, 3.35e12, 989e12
EMBED = V * D  # one table; the output head is as large
PARAMS = 2 * EMBED + L * (2 * D * H * D_H + 2 * D * H_KV * D_H + 3 * D * D_FF + 2 * D) + D  # norms included
KV_PER_TOKEN = 2 * L * H_KV * D_H * 2  # K and V, every layer, bf16


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("long_context_structure")


def _floors(n):
    """(prefill s, decode step s, sequences that fit) for one n-token sequence, by the roofline."""
    cache = KV_PER_TOKEN * n
    weights_read = (PARAMS - EMBED) * 2  # the input table is a lookup, not read whole
    layers = PARAMS - 2 * EMBED
    prefill_flops = 2 * layers * n + 2 * EMBED + 2 * L * H * n * n * D_H  # causal: half of 2 * (2 h n^2 d_h)
    prefill = max((weights_read + cache) / HBM_BW, prefill_flops / PEAK)
    decode_flops = 2 * layers + 2 * EMBED + 2 * L * 2 * H * n * D_H
    decode = max((weights_read + cache) / HBM_BW, decode_flops / PEAK)
    return prefill, decode, int((HBM_BYTES - 2 * PARAMS) // cache)


def test_params_and_adapter():
    assert PARAMS * 2 == 16_060_522_496  # 8.03B parameters in bf16
    adapter = L * 16 * ((D + H * D_H) * 2 + (D + H_KV * D_H) * 2) * 2  # rank * (in + out) for q, o, k, v
    assert adapter == 27_262_976 == 26 * 2**20


def test_table(nb):
    out = chapter_outputs.printed(nb, "question, chunk, top_k, stuffed")
    rows = {"fine-tuned, question only": 200, "base, 2K-token format prompt": 2_200,
            "RAG, top-5 chunks of 512": 2_760, "long context, 100K stuffed": 100_200}
    floors = {}
    for name, n in rows.items():
        floors[name] = prefill, decode, fit = _floors(n)
        line = f"{name:<30}{n:>8,}{1e3 * prefill:>11.1f}{1e3 * decode:>8.1f}{fit:>12,}"
        assert line in out, line
    rag, lc = floors["RAG, top-5 chunks of 512"], floors["long context, 100K stuffed"]
    assert (rag[2], lc[2]) == (176, 4)
    assert floors["fine-tuned, question only"][0] == floors["fine-tuned, question only"][1]  # memory-bound
    assert round(lc[0] / rag[0]) == 99
    assert f"prefill {lc[0] / rag[0]:.0f}x, sequences that fit {rag[2] // lc[2]}x fewer" in out
    assert 5_000 * 4_000 / 2**17 == pytest.approx(152.6, abs=0.05)
    assert "corpus 20,000,000 tokens = 153 windows" in out
    assert "15.0 GiB, or a rank-16 LoRA adapter on one shared base, 26 MiB" in out
    expect = {"lcs_rft_ft_ms": f"{1e3 * floors['fine-tuned, question only'][0]:.1f}",
              "lcs_rft_fmt_ms": f"{1e3 * floors['base, 2K-token format prompt'][0]:.1f}",
              "lcs_rft_rag_ms": f"{1e3 * rag[0]:.0f}", "lcs_rft_lc_s": f"{lc[0]:.1f}", "lcs_rft_lc_ratio": "99",
              "lcs_rft_fit_rag": "176", "lcs_rft_fit_lc": "4", "lcs_rft_tpot_rag": f"{1e3 * rag[1]:.1f}",
              "lcs_rft_tpot_lc": f"{1e3 * lc[1]:.1f}", "lcs_rft_windows": "153", "lcs_rft_weights": "15.0 GiB",
              "lcs_rft_adapter": "26 MiB"}
    for key, value in expect.items():
        assert chapter_outputs.glued(nb, key) == value, key


def test_section_form(nb):
    text = chapter_outputs.section(nb, LABEL, end="long_context_structure-contract")
    assert text.startswith(f"({LABEL})=\n### ")
    assert "```{admonition} In the interview\n:class: tip\n**[M]" in text
    assert ":class: dropdown" in text
    assert "| | fine-tuning | retrieval (RAG) | long context |" in text
    chapter_outputs.assert_cited(text, ["ovadia2023finetuning", "gekhman2024finetuning", "zhang2024raft", "llama3",
                                        "lewis2020rag"])
    assert "{cite:p}`llama3{Table 3, §3.4.2}`" in text  # the architecture is in Table 3, the 128K window in 3.4.2
    assert "only when it saw many paraphrases" not in text and "could ease this" in text  # Ovadia: "could alleviate"
    assert "| up-front work |" in text and "ms + retrieval" in text
    labels = chapter_outputs.book_labels()
    for ref in ("multi_tenant_serving-multi-lora", "prefix_caching-hashed", "long_context_structure-long-vs-retrieval",
                "rope_scaling-long-vs-retrieval", "decoding_sampling-structured-output",
                "long_context_structure-effective-context"):
        assert f"{{ref}}`{ref}`" in text and ref in labels, ref
