"""Section long_context_structure-streaming-chunks of "Sparse patterns and long-context evaluation".

The lookahead and left reach of stacked masks, recomputed in closed form (r * L frames for frame-wise
lookahead, C - 1 for chunk masks at any depth, W * L back), the keys per query, and the K/V cache bytes,
against the chapter's stored outputs; the chunk mask is rebuilt with WeNet's own loop (subsequent_chunk_mask).
"""
import chapter_outputs

FRAME_MS, LEFT, UTT = 40, 64, 250  # 40 ms encoder frames, 64 frames of left context, a 10 s utterance
NB = chapter_outputs.notebook("long_context_structure")


def glued(key):
    return chapter_outputs.glued(NB, key)


def wenet_chunk_mask(size, chunk, left):  # WeNet wenet/utils/mask.py, subsequent_chunk_mask, as a list of rows
    rows = []
    for i in range(size):
        start = 0 if left < 0 else max((i // chunk - left) * chunk, 0)
        end = min((i // chunk + 1) * chunk, size)
        rows.append("".join("1" if start <= j < end else "0" for j in range(size)))
    return rows


def test_printed_masks():
    out = chapter_outputs.printed(NB, "def chunk_mask")
    chunk_rows = [" ".join(r) for r in wenet_chunk_mask(8, 2, 1)]
    assert all(row in out for row in chunk_rows)
    frame_rows = [" ".join("1" if -2 <= j - i <= 1 else "0" for j in range(8)) for i in range(8)]
    assert all(row in out for row in frame_rows)


def test_latency_table():
    out = chapter_outputs.printed(NB, "def reach")
    for layers in (6, 12):
        assert f"{'full, 10 s utterance':<22}{layers:>3}{UTT - 1:>11}{UTT - 1:>10}{(UTT - 1) * FRAME_MS:>8,} ms{UTT:>11}" in out
        for r in (1, 2):
            keys = LEFT + 1 + r
            line = f"{f'lookahead r = {r}':<22}{layers:>3}{LEFT * layers:>11}{r * layers:>10}{r * layers * FRAME_MS:>8,} ms{keys:>11}"
            assert line in out
        for c in (4, 8, 16):
            keys = (LEFT // c + 1) * c  # left chunks plus the whole own chunk
            far_left = LEFT * layers + c - 1  # the last frame of a chunk reaches back furthest
            line = f"{f'chunk C = {c}':<22}{layers:>3}{far_left:>11}{c - 1:>10}{(c - 1) * FRAME_MS:>8,} ms{keys:>11}"
            assert line in out
    assert glued("lcs_st_r1_l6_ms") == "240" and glued("lcs_st_r1_l12_ms") == "480"
    assert glued("lcs_st_r2_l12_ms") == "960"
    assert glued("lcs_st_c8_ms") == "280" and glued("lcs_st_c16_ms") == "600"
    assert glued("lcs_st_full_ms") == "9,960"


def test_cache():
    out = chapter_outputs.printed(NB, "def layer")
    assert "equals the masked full pass: True" in out
    size = 2 * 12 * LEFT * 256 * 4  # K and V, 12 layers, 64 frames, width 256, fp32
    assert size == 1_572_864 and f"{size:,} bytes = {size // 1024} KiB" in out
    assert glued("lcs_st_cache_kib") == "1536"
    assert 2 * 12 * 256 * 4 == 24 * 1024  # the prose's 24 KiB a frame for a full-history cache


def test_latency_from_first_sample():
    # WeNet Conv2dSubsampling4 right_context = 6 input frames of 10 ms; chunk 16 from its first sample
    assert glued("lcs_st_sub_ms") == str(6 * 10)
    assert glued("lcs_st_c16_first_ms") == f"{16 * FRAME_MS + 6 * 10:,}" == "700"


def test_fp16_cache_and_cer():
    size = 2 * 12 * LEFT * 256 * 4
    assert glued("lcs_st_1000_fp32_mib") == f"{1000 * size // 2**20:,}" == "1,500"
    assert glued("lcs_st_1000_fp16_mib") == str(1000 * size // 2 // 2**20) == "750"
    # WeNet examples/aishell/s0/README.md, U2++ Conformer: CER full / chunk 16
    assert glued("lcs_st_cer_full") == "5.19" and glued("lcs_st_cer_c16") == "5.81"
    assert glued("lcs_st_cer_rel") == str(round(100 * (5.81 - 5.19) / 5.19)) == "12"
    assert glued("lcs_st_cer_resc_c16") == "5.05"
    out = chapter_outputs.printed(NB, "def layer")
    assert "in fp16: 750 MiB for 1,000 streams" in out
