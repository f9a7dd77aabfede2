"""why_attention-limits-beyond-cost: training compute C = 6ND (Kaplan et al. 2020, §2.1, Table 1: 2N forward
FLOPs per token; the backward twice that) for Llama 3 8B, its parameter count recomputed by hand from the
published configuration (meta-llama/Meta-Llama-3-8B config.json), and the section's links and citations."""
import json
import pathlib
import chapter_outputs

NB = pathlib.Path(__file__).parents[1] / "book" / "why_attention.ipynb"
# Llama 3 8B config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, head 128, FFN 14336, vocab 128256, untied
D, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 4096, 32, 32, 8, 128, 14_336, 128_256


def _llama3_8b_params():
    attn = D * HEADS * HEAD_DIM * 2 + D * KV_HEADS * HEAD_DIM * 2  # W_Q, W_O; W_K, W_V
    mlp = 3 * D * FFN  # gate, up, down
    norms = 2 * D  # two RMSNorm gains per layer
    return LAYERS * (attn + mlp + norms) + 2 * VOCAB * D + D  # + embedding, LM head, final norm


def _stored(marker):
    nb = json.loads(NB.read_text())
    return chapter_outputs.printed(nb, marker), chapter_outputs.cell_glue(nb, marker)


def test_training_flops_six_nd():
    n = _llama3_8b_params()
    assert n == 8_030_261_248
    forward, backward = 2 * n, 4 * n  # backward: dX and dW, each as costly as the forward
    per_token = forward + backward
    text, glued = _stored('mk.MODEL_FACTS["llama-3-8b"]\nn_lim')
    assert f"N = {n:,} parameters" in text
    embed = VOCAB * D  # input embedding: a lookup, no matmul FLOPs (the untied LM head stays in)
    per_token_ne = 6 * (n - embed)
    assert f"input embedding {embed:,}" in text
    assert glued == {"wa_lim_n": f"{n / 1e9:.2f}", "wa_lim_6n": f"{per_token / 1e9:.1f}",
                     "wa_lim_c1t": f"{per_token * 10**12:.2e}",
                     "wa_lim_6n_ne": f"{per_token_ne / 1e9:.1f}", "wa_lim_c1t_ne": f"{per_token_ne * 10**12:.2e}"}
    assert glued["wa_lim_6n"] == "48.2" and glued["wa_lim_c1t"] == "4.82e+22"
    assert glued["wa_lim_6n_ne"] == "45.0" and glued["wa_lim_c1t_ne"] == "4.50e+22"


def _section():
    nb = json.loads(NB.read_text())
    src = ["".join(c["source"]) for c in nb["cells"]]
    start = next(i for i, s in enumerate(src) if "(why_attention-limits-beyond-cost)=" in s)
    end = next(i for i, s in enumerate(src) if "(why_attention-rnn-gradients)=" in s)
    return "\n".join(src[start:end])


def test_section_sits_inside_limits_and_links_its_remedies():
    text = _section()
    for label in ("attention_cost-training-flops", "decoding_sampling-confident-error",
                  "decoding_sampling-test-time-compute", "why_attention-as-explanation",
                  "beyond_kv_cache-quadratic", "state_space_models-recall"):
        assert f"{{ref}}`{label}`" in text, label
    for key in ("kaplan2020scaling", "lewis2020rag", "liu2024lost", "shi2024cad", "farquhar2024semantic",
                "jain2019attention", "wiegreffe2019attention", "peng2025rwkv7", "hinton2015distilling"):
        assert f"`{key}{{" in text, key
    assert "Chain of thought gives a fixed-depth model more sequential steps per answer" in text
    for glue_key in ("wa_lim_6n_ne", "wa_lim_c1t_ne"):
        assert f"{{glue:text}}`{glue_key}`" in text, glue_key
    assert "while still holding all of them in memory" in text
    assert "BiLSTM encoders with additive attention" in text
    assert "change between samples" in text
