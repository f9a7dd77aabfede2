"""Three short additions (round 45): why rotate_half (positions), num_ctx against the trained context
(serving_reliability-ollama) and FlashAttention-3's qv path and TransMLA (mla_serving).

Key phrases and citations are checked in the chapters' sources; the num_ctx cache sizes are recomputed
from Llama 3 8B's config.json shape (32 layers, 8 KV heads of 128, 2-byte f16 cache), not through mha_kit.
"""
import json
import pathlib
import re

import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
BIB = (pathlib.Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
L, KV, HD, BYTES = 32, 8, 128, 2  # Llama 3 / 3.1 8B: layers, KV heads, head size; f16 cache


def cells(name):
    return json.loads((BOOK / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def markdown(name):
    return "\n".join("".join(c["source"]) for c in cells(name) if c["cell_type"] == "markdown")


def flat(text):
    return " ".join(text.split())


def test_rotate_half_why():
    text = flat(markdown("positions"))
    start = text.index("Which dimensions form a pair is a convention")
    para = text[start:start + 3000]
    for phrase in ("two contiguous slices", "strided gather", "`x[..., ::2]`", "`(-x2, x1)`",
                   "{cite}`hfllamarotatehalf,gptneoxrotary`", "{cite}`hfllamaconvert`", "The half-split is simple to index",
                   "a view as complex numbers"):
        assert phrase in para, phrase
    assert "because its indexing is simple" not in para
    for phrase in ():
        assert phrase in para, phrase
    assert "5dd4a63548857797727ae73eeb6a6e886ea02a3e" in BIB  # transformers commit read
    assert "ea7aefd8f8e183256992d9fede4d7c71a46d67a5" in BIB  # gpt-neox commit read


def test_num_ctx_text():
    text = flat(markdown("serving_reliability"))
    start = text.index("(serving_reliability-ollama)=")
    sec = text[start:start + 6000]
    for phrase in ("131,072", "`num_ctx`", "2,048 tokens", "v0.1.26", "v0.6.7", "v0.15.5 (February 2026)",
                   "drops the oldest messages", "{cite:p}`ollamanumctx`", "{ref}`kv_cache_calculator-formula`"):
        assert phrase in sec, phrase
    assert "@misc{ollamanumctx," in BIB and "44b466eeb" in BIB and "0334ffa62" in BIB


def test_num_ctx_numbers():
    per_token = 2 * L * KV * HD * BYTES
    assert per_token == 131_072
    nb = chapter_outputs.notebook("serving_reliability")
    assert chapter_outputs.glued(nb, "sr_numctx_per_token_kib") == "128"
    assert chapter_outputs.glued(nb, "sr_numctx_32k_gib") == f"{per_token * 32768 / 2**30:.0f}" == "4"
    code = [c for c in cells("serving_reliability") if c.get("id") == "sr-numctx-code"]
    assert len(code) == 1
    out = "".join("".join(o.get("text", "")) for o in code[0]["outputs"])
    rows = dict((int(a.replace(",", "")), float(b)) for a, b in re.findall(r"num_ctx\s+([\d,]+): +([\d.]+) GiB", out))
    assert set(rows) == {2048, 8192, 32768, 131072}
    for n, gib in rows.items():
        assert gib == round(per_token * n / 2**30, 2), (n, gib)
    assert rows[2048] == 0.25 and rows[131072] == 16.0


def test_mla_qv_and_transmla():
    text = flat(markdown("mla_serving"))
    own = text[text.index("(mla_serving-own-kernels)="):text.index("(mla_serving-fp8-latent)=")]
    for phrase in ("`qv`", "PR #1504", "{cite}`fa3qv{PR #1504}`", "576", "512-wide latent", "`softmax_scale`",
                   "default to $1/\\sqrt{d + d_v}$"):
        assert phrase in own, phrase
    svd = text[text.index("(mla_serving-svd-kv)="):]
    svd = svd[:svd.index("A toy key projection")]
    for phrase in ("TransMLA", "{cite:p}`meng2025transmla{Abstract, v1}`", "93%", "10.6x", "which is an MHA model, not a GQA one",
                   "{cite:p}`llama2modelcard{Model Details}`"):
        assert phrase in svd, phrase
    assert "06e34f62" in BIB and "2502.07864" in BIB
