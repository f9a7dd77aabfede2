"""Section attention_sinks-not-positions: the sink is not a position embedding's doing.

The toy (one causal head, no position encoding, seed 42) is recomputed here with its own softmax and
mask, independent of mha_kit, and compared with the stored outputs; the uniform-row column sums are
checked against the harmonic numbers in exact fractions; the prose claims are checked against the
sources' numbers (StreamingLLM Tables 2 and 3, Gu et al. Tables 3 and 4)."""
import json
import pathlib
import re
from fractions import Fraction

import numpy as np

ROOT = pathlib.Path(__file__).parents[1]
NB = ROOT / "book" / "attention_sinks.ipynb"
N, D, SEED = 8, 4, 42


def _cells():
    return json.loads(NB.read_text())["cells"]


def _source(cell):
    return "".join(cell["source"])


def _printed():
    cell = next(c for c in _cells() if "def no_pe_layer(" in _source(c))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout").splitlines()


def _glued():
    out = {}
    for cell in _cells():
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                out[name] = o["data"]["application/papermill.record/text/plain"].strip("'")
    return out


def _layer(x, wq, wk, wv):
    n = len(x)
    s = (x @ wq) @ (x @ wk).T / np.sqrt(D)
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True), x @ wv


def _toy():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((N, D))
    ws = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(3)]
    return x, ws


def _row(values, fmt):
    return " ".join(format(v, fmt) for v in values)


def test_toy_table_matches_an_independent_layer():
    x, ws = _toy()
    w, v = _layer(x, *ws)
    rev, _ = _layer(x[::-1], *ws)
    seen = [N - j for j in range(N)]  # key j is visible to queries j..N-1
    even = [sum(Fraction(1, i + 1) for i in range(j, N)) for j in range(N)]  # H_N - H_j
    lines = _printed()
    assert lines[0].split(":")[1].split() == [str(j) for j in range(N)]
    assert lines[1].split(":")[1].split() == [str(c) for c in seen]
    assert lines[2].split(":")[1].split() == _row([float(e) for e in even], "5.2f").split()
    assert lines[3].split(":")[1].split() == _row(w.sum(axis=0), "5.2f").split()
    assert lines[4] == f"query 0's weights: {[1.0] + [0.0] * (N - 1)} -> its output is its own value: True"
    assert lines[5] == (f"reversed order: token {N - 1} is first, seen by {N} queries, receives {rev[:, 0].sum():.2f} "
                        f"(it received {w[:, -1].sum():.2f} when last)")
    # the prose's claims about the toy
    assert int(np.argmax(w.sum(axis=0))) == 0  # key 0 receives the most weight, untrained
    assert rev[:, 0].sum() > 10 * w[:, -1].sum()  # the same token, first versus last
    assert np.array_equal(w[0] @ v, v[0])


def test_glued_numbers_are_the_harmonic_sums_and_the_toy():
    x, ws = _toy()
    w, _ = _layer(x, *ws)
    rev, _ = _layer(x[::-1], *ws)
    h8 = sum(Fraction(1, i) for i in range(1, N + 1))
    g = _glued()
    assert g["no_even0"] == f"{float(h8):.2f}" == "2.72"
    assert g["no_even_ratio"] == f"{float(h8 * N):.0f}" == "22"
    assert g["no_last"] == f"{w[:, -1].sum():.2f}" and g["no_first"] == f"{rev[:, 0].sum():.2f}"


def test_drill_harmonic_number_for_1000_tokens():
    h = sum(Fraction(1, i) for i in range(1, 1001))
    text = _section()
    assert f"\\approx {float(h):.2f}" in text and "1,000 and 1" in text


def _section():
    cells = _cells()
    start = next(i for i, c in enumerate(cells) if "(attention_sinks-not-positions)=" in _source(c))
    end = next(i for i, c in enumerate(cells) if _source(c).startswith("## StreamingLLM"))
    return "\n".join(_source(c) for c in cells[start:end])


def test_section_sits_between_why_and_the_rolling_cache_and_has_no_position_encoding():
    cells = _cells()
    idx = {key: next(i for i, c in enumerate(cells) if key in _source(c)) for key in
           ("## Why the first tokens collect attention", "attention_mass_by_position(",
            "(attention_sinks-not-positions)=", "## StreamingLLM: keep the sinks")}
    order = list(idx.values())
    assert order == sorted(order)
    code = next(_source(c) for c in cells if "def no_pe_layer(" in _source(c))
    for word in ("rotary", "rope", "alibi", "positions"):
        assert word not in code.lower()


def test_the_misleading_line_is_gone_and_the_sources_numbers_are_right():
    text = "\n".join(_source(c) for c in _cells())
    assert "position of the sink\nmatters more than its content" not in text
    assert "it is their position, not their content" not in text
    sec = _section()
    # StreamingLLM Table 2 (MPT-7B, Llama-2-7B) and Table 3 (160M models), Gu et al. Tables 3 and 4
    for number in ("460.29", "14.99", "11.88", "10.51", "9.59", "9.54", "18.49", "18.05", "18.01",
                   "20.35%", "20.78%", "18.18%", "74.12%", "0.00%"):
        assert number in sec, number
    for cite in ("xiao2024streamingllm{Table 2}", "xiao2024streamingllm{§3.3, Table 3}",
                 "gu2024sinkemerges{§7.1, Table 3}", "gu2024sinkemerges{§3.1}", "gu2024sinkemerges{§7.3, Table 4}",
                 "barbero2025firsttoken{Abstract}", "{cite}`streamingllm_issue54`", "{cite}`streamingllm_issue7`",
                 "{ref}`attention_sinks-learned-sink-logits`"):
        assert cite in sec, cite
    assert "(attention_sinks-learned-sink-logits)=\n## Learned sink logits: gpt-oss" in text
    bib = (ROOT / "references.bib").read_text()
    for key in ("gu2024sinkemerges", "barbero2025firsttoken", "streamingllm_issue54", "streamingllm_issue7"):
        assert len(re.findall(r"@\w+\{" + key + ",", bib)) == 1, key


def test_interview_box_and_dropdowns():
    sec = _section()
    assert re.search(r"```\{admonition\} In the interview\n:class: tip\n\[M\] ", sec)
    assert sec.count(":class: dropdown") == 4 and "followup" not in sec


def test_alibi_penalties_recomputed_and_the_sink_count_claim_is_llama_only():
    # MPT-7B: 32 heads, alibi_bias_max 8, max_seq_len 2048 -> slopes 2^(-8h/32), h = 1..32
    g = _glued()
    n_heads, bias_max, max_seq = 32, 8, 2048  # MPT-7B config.json: n_heads, alibi_bias_max, max_seq_len
    exps = [bias_max * h / n_heads for h in range(1, n_heads + 1)]  # slope of head h: 2^-(bias_max h / n_heads)
    steep, shallow = 2 ** -exps[0], 2 ** -exps[-1]
    dist = max_seq - 1  # the farthest key from the last query
    assert g["alibi_slope_max"] == f"2^-{exps[0]:g} = {steep:.2f}"
    assert g["alibi_slope_min"] == f"2^-{exps[-1]:g} = {shallow:.4f}"
    assert g["alibi_pen_max"] == f"{steep * dist:,.0f}"
    assert g["alibi_pen_min"] == f"{shallow * dist:.1f}"
    assert g["alibi_dist"] == f"{dist:,}"
    assert g["no_even_last"] == f"{1 / N:.3f}"
    sec = _section()
    assert "the learned scores on the first token outweigh" not in sec
    assert "so they spread the sink over the first few" not in sec
    assert "only Llama-2 measurably needs more than one" in sec
    # StreamingLLM Table 2: Falcon, MPT, Pythia restored with one kept token; Table 1 for 5.60/5.40
    for number in ("12.12", "11.95", "12.09", "xiao2024streamingllm{Table 1}", "{cite}`mpt7bconfig`",
                   "press2022alibi{§3}", "exceeds ε = 0.3", "32.73%", "33.13%", "35.53%"):
        assert number in sec, number
    assert "a key bias with no token" not in sec
    bib = (ROOT / "references.bib").read_text()
    assert len(re.findall(r"@\w+\{mpt7bconfig,", bib)) == 1
