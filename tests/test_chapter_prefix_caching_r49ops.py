"""Section prefix_caching-semantic-cache-price (r49ops): the break-even hit rate and false-hit share.

Recomputed from the prices and token counts the section states; the MeanCache figures it quotes are
checked against the bibliography entry's note.
"""
import chapter_outputs

NB = chapter_outputs.notebook("prefix_caching")
LLM = (2_000 * 1.0 + 300 * 4.0) / 1e6  # $ a call: 2,000 in at $1/M, 300 out at $4/M
OVER = 30 * 0.02 / 1e6 + 2.0 / 1e6  # $ embedding 30 tokens at $0.02/M, one lookup at $2 per million
WRONG = 0.50


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_break_even_hit_rate():
    assert glued("pc_sc_hstar") == f"{OVER / LLM:.3%}" == "0.081%"
    assert glued("pc_sc_llm") == "3.20"
    assert glued("pc_sc_over") == f"{1e3 * OVER:.4f}"


def test_break_even_at_ten_times_the_lookup_price():
    h_x = (30 * 0.02 / 1e6 + 10 * 2.0 / 1e6) / LLM
    assert glued("pc_sc_lookup_x") == "10"
    assert glued("pc_sc_hstar_x") == f"{h_x:.2%}" == "0.64%"
    assert h_x < LLM / WRONG * 1.01  # still far below any realistic hit rate: the false-hit share decides


def test_false_hit_share_is_about_call_over_wrong():
    for h in (5, 10, 20, 31):
        f_star = (h / 100 * LLM - OVER) / (h / 100 * WRONG)
        assert glued(f"pc_sc_fstar_{h}") == f"{f_star:.2%}"
        assert abs(f_star - LLM / WRONG) < 0.0002


def test_cites_and_links():
    text = chapter_outputs.section(NB, "prefix_caching-semantic-cache-price", end="## Summary")
    chapter_outputs.assert_cited(text, ["meancache2024", "gptcache"])
    assert "31\\%" in chapter_outputs.bibliography().split("@misc{meancache2024,")[1].split("@")[0]
    for ref in ("serving_kv_cache-semantic-caching", "serving_kv_cache-answer-cache-key"):
        assert ref in chapter_outputs.book_labels()
