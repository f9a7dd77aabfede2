"""why_attention-steering-focus: PASTA's post-hoc rescaling (Zhang et al. 2024; pastalib/pasta.py adds log(alpha)
to the scores outside the marked span of the steered heads) recomputed with plain numpy from the definition:
multiply the softmax numerators outside the span by alpha and renormalise; compared with the chapter's stored
output. Plus the section's place, links and citations."""
import json
import math
import pathlib

import numpy as np

NB = pathlib.Path(__file__).parents[1] / "book" / "why_attention.ipynb"
LABEL = "(why_attention-steering-focus)="


def _cells():
    return json.loads(NB.read_text())["cells"]


def _stored_text():
    cell = next(c for c in _cells() if c["cell_type"] == "code" and "default_rng(47)" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def _reweight(scores, span, alpha):
    """exp(s_j) times alpha outside the span, divided by the new row sum: the multiplicative form, no log."""
    numer = [math.exp(s) * (1.0 if inside else alpha) for s, inside in zip(scores, span)]
    total = sum(numer)
    return [x / total for x in numer]


def test_span_weights_match_the_multiplicative_definition():
    text = _stored_text()
    scores = np.random.default_rng(47).standard_normal(8)
    span = [2 <= j <= 4 for j in range(8)]
    base = _reweight(scores, span, 1.0)
    assert f"weights, no steering: {np.round(np.array(base), 3)}" in text
    m = sum(w for w, inside in zip(base, span) if inside)
    for alpha in (1.0, 0.1, 0.01):
        w = _reweight(scores, span, alpha)
        inside = sum(x for x, s in zip(w, span) if s)
        outside_max = max(x for x, s in zip(w, span) if not s)
        assert abs(inside - m / (m + alpha * (1 - m))) < 1e-12
        line = (f"alpha = {alpha:<4}: weight on the span {inside:.3f} (closed form {inside:.3f}), "
                f"largest outside {outside_max:.3f}, ratios inside the span kept: True")
        assert line in text, line
    # "include": exp(s_j) / alpha on the span (log(1/alpha) added there) gives the same row as "exclude"
    numer = [math.exp(s) / (0.01 if inside else 1.0) for s, inside in zip(scores, span)]
    include = [x / sum(numer) for x in numer]
    same = max(abs(x - y) for x, y in zip(include, _reweight(scores, span, 0.01))) < 1e-12
    assert same
    assert f"equals +log(alpha) outside it: {same}" in text
    # a post-softmax bump of 0.2 on the span, renormalised, changes the ratios inside the span
    bumped = [w + (0.2 if inside else 0.0) for w, inside in zip(base, span)]
    b_in = [x for x, s in zip(bumped, span) if s]
    o_in = [x for x, s in zip(base, span) if s]
    kept = max(abs(x / sum(b_in) - y / sum(o_in)) for x, y in zip(b_in, o_in)) < 1e-8
    assert not kept
    assert f"keeps the ratios inside it: {kept}" in text
    # steering moves mass onto the span, monotonically as alpha falls
    masses = [sum(x for x, s in zip(_reweight(scores, span, a), span) if s) for a in (1.0, 0.1, 0.01)]
    assert masses[0] < masses[1] < masses[2] < 1.0


def test_section_place_links_and_citations():
    cells = _cells()
    sources = ["".join(c["source"]) for c in cells]
    start = next(i for i, s in enumerate(sources) if s.startswith(LABEL))
    heads = next(i for i, s in enumerate(sources) if s.startswith("(why_attention-what-heads-learn)="))
    pruning = next(i for i, s in enumerate(sources) if s.startswith("(why_attention-pruning-cost)="))
    assert heads < start < pruning
    body = "\n".join(sources[start:pruning])
    for ref in ("cross_and_masked_attention-masks", "long_context_structure-effective-context",
                "why_attention-as-explanation", "common_mistakes-uniform-attention",
                "attention_sinks-differential", "rope_scaling-yarn-temperature"):
        assert "{ref}`" + ref + "`" in body, ref
    for key in ("liu2016supervised", "tachibana2018guided", "zhang2024pasta", "pastacode", "dcttscode",
                "pytorchsdpa", "torch213sdpabias"):
        assert "`" + key + "{" in body, key
    assert "In the interview" in body
    assert "tachibana2018guided{title}" in body and "patching" not in body
