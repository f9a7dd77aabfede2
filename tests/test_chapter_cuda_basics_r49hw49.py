"""Section cuda_basics-sram-batching: batching and pricing on an SRAM-only chip (Groq's LPU).

Recomputed from the primary constants written out here, not through mha_kit: 220 MiB of SRAM per TSP and
10,440 TSPs (Abts et al., ISCA 2022, abstract), 80 TB/s, 750 INT8 TOPS and 300 tokens/s for Llama 2 70B
(TechPowerUp, Feb 2024), Llama 3 70B's shape (config.json) and the H100 SXM datasheet."""
import math

import chapter_outputs as co

NB = co.notebook("cuda_basics")
SRAM = 220 * 2**20
L, KV, HD = 80, 8, 128  # Llama 3 70B layers, KV heads, head size
P70 = 70_553_706_496  # parameters, embedding and untied output head included
W8 = P70  # bytes at 8 bits
TOKEN_S = 1 / 300


def kv_bytes(ctx, nbytes=2):
    return 2 * L * KV * HD * ctx * nbytes


def fleet(batch, ctx):
    chips = math.ceil(W8 / SRAM) + math.ceil(batch * kv_bytes(ctx) / SRAM)
    return chips, chips * TOKEN_S / batch


def test_chip_counts_and_ridges():
    g = co.cell_glue(NB, "LPU_SRAM = ")
    assert g["cb49_sram_mb"] == "230.7"  # 220 MiB is the press's 230 MB
    assert g["cb49_chips_w"] == "306" == str(math.ceil(W8 / SRAM))
    assert g["cb49_kv_chips"] == f"{kv_bytes(8192) / SRAM:.1f}" == "11.6"
    assert g["cb49_kv_chips_8bit"] == f"{kv_bytes(8192, 1) / SRAM:.1f}"
    assert g["cb49_lpu_ridge"] == f"{750e12 / 80e12 / 2:.1f}" == "4.7"
    assert g["cb49_h100_ridge"] == f"{989e12 / 3.35e12:.0f}" == "295"
    assert g["cb49_h100_ridge_fp8"] == f"{3958e12 / 2 / 3.35e12 / 2:.0f}" == "295"  # like for like, 8-bit
    assert g["cb49_chips_w_230"] == str(math.ceil(W8 / 230e6)) == "307"  # serving_reliability's count
    assert g["cb49_h100_fp8_tflops"] == "1,979" and g["cb49_lpu_tops"] == "750"
    assert g["cb49_fp8_over_int8"] == f"{3958 / 2 / 750:.1f}"
    assert "10,440 chips hold 2.41 TB" in co.printed(NB, "LPU_SRAM = ")
    assert 10_440 * SRAM > 2e12  # the abstract's "more than 2 TeraBytes"


def test_pipeline_table():
    lines = co.printed(NB, "def sram_fleet").splitlines()
    for batch, ctx in ((1, 8192), (8, 8192), (80, 8192), (80, 2048), (80, 32768)):
        chips, cost = fleet(batch, ctx)
        row = next(x.split() for x in lines[1:6] if x.split()[:2] == [str(batch), f"{ctx:,}"])
        assert row[2] == f"{chips:,}"
        assert row[3] == f"{min(batch, L) / L:.0%}"
        assert row[4] == f"{batch / TOKEN_S:,.0f}"
        assert row[5] == f"{1e3 * cost:.1f}"
        assert row[6] == f"{1 - math.ceil(W8 / SRAM) / chips:.0%}"
    g = co.cell_glue(NB, "def sram_fleet")
    assert g["cb49_p_chips"] == "1,237"
    assert g["cb49_kv_floor"] == f"{1e3 * kv_bytes(8192) / SRAM * TOKEN_S:.1f}"
    # compute binds when the fleet's INT8 peak is used: 300 tok/s x in flight x 2 ops a weight byte
    flight = TOKEN_S * math.ceil(W8 / SRAM) * 750e12 / (2 * W8)
    assert g["cb49_max_flight"] == f"{flight:,.0f}" and 5_000 < flight < 6_000
    assert flight > 80 * 750 / 80 / 2 * 10  # far past P x ridge, the old wrong bound
    slot, read = TOKEN_S / L, W8 / (math.ceil(W8 / SRAM) * 80e12)
    assert g["cb49_slot_us"] == f"{1e6 * slot:.1f}" == "41.7"
    assert g["cb49_read_us"] == f"{1e6 * read:.1f}" and g["cb49_slot_ratio"] == f"{slot / read:.0f}" == "14"
    assert g["cb49_bw_use"] == f"{80 * 300 * W8 / (math.ceil(W8 / SRAM) * 80e12):.0%}" == "7%"
    assert g["cb49_int8_use"] == f"{80 * 300 * 2 * W8 / (math.ceil(W8 / SRAM) * 750e12):.1%}" == "1.5%"
    assert "stages occupied" in lines[0] and "busy" not in lines[0]
    # the cost per token falls with the batch towards the cache term, never below it
    assert fleet(80, 8192)[1] > kv_bytes(8192) / SRAM * TOKEN_S


def test_section_cites_and_links():
    text = co.section(NB, "cuda_basics-sram-batching", end="cuda_basics-int-vs-float")
    co.assert_cited(text, ["abts2022tsm", "abts2020tsp", "techpowerupgroq2024", "semianalysisgroq2024", "nvidiah100"])
    assert "more per token than an HBM fleet" not in text and "4,096-token context" in text
    co.assert_links(text, ["serving_reliability-sram-design", "worked_example-bytes", "tensor_parallel-pipeline-bubble",
                           "cuda_basics-vliw-tpu"])
    assert "In the interview" in text and ":class: dropdown" in text
    assert "my inference" in text
