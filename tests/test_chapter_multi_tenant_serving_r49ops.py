"""Section multi_tenant_serving-retrieval-isolation (r49ops): what a post-filter after top-k keeps.

The binomial tail recomputed with its complement (one minus the lower tail), not the section's sum; the
Qdrant and Pinecone figures checked against their bibliography notes.
"""
import math

import chapter_outputs

NB = chapter_outputs.notebook("multi_tenant_serving")


def p_at_least(share, need=10, n=100):
    return 1 - sum(math.comb(n, j) * share ** j * (1 - share) ** (n - j) for j in range(need))


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_post_filter_recall():
    assert glued("mt_rt_p_10") == f"{p_at_least(0.1):.2%}" == "54.87%"
    assert glued("mt_rt_p_2") == "100.00%"
    assert [glued(f"mt_rt_own_{t}") for t in (2, 10, 100, 500)] == ["50.0", "10.0", "1.0", "0.2"]
    assert p_at_least(1 / 500) < 1e-12
    assert glued("mt_rt_own_wide") == "2"


def test_cites_sources_and_links():
    text = chapter_outputs.section(NB, "multi_tenant_serving-retrieval-isolation",
                                   end="multi_tenant_serving-mm-chunked-prefill")
    chapter_outputs.assert_cited(text, ["qdrantmultitenancy", "pineconemultitenancy"])
    bib = chapter_outputs.bibliography()
    assert "1000" in bib.split("@misc{qdrantmultitenancy,")[1].split("@")[0]
    assert "100 RUs" in bib.split("@misc{pineconemultitenancy,")[1].split("@")[0]
    assert "serving_operations-privacy" in chapter_outputs.book_labels()
