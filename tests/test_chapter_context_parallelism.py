"""The chapter "Context parallelism": what the ring makes possible (pass6, Q468), recomputed by hand."""
from booktoc import cells, printed

CHAPTER = "context_parallelism"


def test_ring_splits_a_1m_token_cache_by_the_number_of_ranks():
    # Llama 3 70B: 80 layers, 8 KV heads of 128, keys and values, 2 bytes (bf16) per number.
    per_token = 2 * 80 * 8 * 128 * 2
    assert per_token == 327_680
    whole = per_token * 1_048_576
    assert whole == 320 * 2**30  # 320 GiB for one 1M-token sequence
    assert whole // 16 == 20 * 2**30 and whole // 8 == 40 * 2**30
    out = printed(CHAPTER)
    for c, gib in ((1, 320), (8, 40), (16, 20)):
        assert f"cp = {c:>2}: {gib:>4} GiB of cache per GPU" in out


def test_ring_section_says_what_it_makes_possible_with_sources():
    srcs = ["".join(c["source"]) for c in cells(CHAPTER)]
    ring = next(i for i, s in enumerate(srcs) if s.startswith(f"({CHAPTER}-ring)="))
    allg = next(i for i, s in enumerate(srcs) if f"({CHAPTER}-all-gather)=" in s)
    section = "\n".join(srcs[ring:allg + 1])
    assert "grows linearly with the number of GPUs" in section
    assert "`liu2023ring{abstract}`" in section and "`yang2024contextparallel{" in section
