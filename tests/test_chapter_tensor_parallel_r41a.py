"""Section tensor_parallel-ring-steps: the ring all-reduce simulated on 4 GPUs, and its alpha-beta time
T = 2(n-1) alpha + 2(n-1)/n M / beta for Llama 3 70B's decode all-reduce at batch 64 (d = 8192, bf16).

Recomputed here from the schedule and the constants, not through mha_kit: alpha = 3.4 us, NCCL 2.30.7's
per-step NVLink latency of the ring with the Simple protocol (src/graph/tuning.cc, hwLatencies); beta =
450 GB/s, NVLink 4 one way (H100 whitepaper: 900 GB/s both ways)."""
import json
import pathlib

import numpy as np
import pytest

from chapter_outputs import glued, notebook

NB = pathlib.Path(__file__).parents[1] / "book" / "tensor_parallel.ipynb"
ALPHA, BETA = 3.4e-6, 450e9
D_MODEL, BATCH, BF16 = 8192, 64, 2
N_SIM = 4


def _cell(cell_id):
    return next(c for c in json.loads(NB.read_text())["cells"] if c.get("id") == cell_id)


def _stdout(cell_id):
    return "".join("".join(o["text"]) for o in _cell(cell_id)["outputs"] if o.get("name") == "stdout")


def _reference_ring(buffers):
    """Message-passing ring all-reduce: returns (final buffers, schedule rows of sent chunk ids, chunks sent)."""
    n = len(buffers)
    chunks = [list(np.array_split(b.copy(), n)) for b in buffers]  # chunks[r][c]
    rows, sent = [], [0] * n
    for s in range(n - 1):  # reduce-scatter: GPU r passes on the chunk it last updated, starting with its own
        send = [(r - s) % n for r in range(n)]
        msgs = {(r + 1) % n: (c, chunks[r][c].copy()) for r, c in enumerate(send)}
        for dst, (c, data) in msgs.items():
            chunks[dst][c] = chunks[dst][c] + data
        rows.append(send)
        sent = [k + 1 for k in sent]
    for s in range(n - 1):  # all-gather: GPU r starts with the chunk it owns, (r + 1) mod n
        send = [(r + 1 - s) % n for r in range(n)]
        msgs = {(r + 1) % n: (c, chunks[r][c].copy()) for r, c in enumerate(send)}
        for dst, (c, data) in msgs.items():
            chunks[dst][c] = data
        rows.append(send)
        sent = [k + 1 for k in sent]
    return np.array([np.concatenate(c) for c in chunks]), rows, sent


def test_schedule_table_matches_the_reference_ring():
    lines = [ln for ln in _stdout("ring41a-02").splitlines() if ln.startswith(("reduce-scatter ", "all-gather "))]
    printed = [[int(x) for x in ln.split("chunk ")[1:]] for ln in lines]
    buffers = np.arange(N_SIM * 2 * N_SIM, dtype=np.int64).reshape(N_SIM, 2 * N_SIM) ** 2
    final, rows, _ = _reference_ring(buffers)
    assert (final == buffers.sum(0)).all()  # the schedule below is a correct all-reduce on its own
    assert len(printed) == 2 * (N_SIM - 1)
    assert printed == rows


def test_every_gpu_ends_with_the_sum_and_sends_2_n_minus_1_chunks():
    buffers = np.random.default_rng(0).integers(0, 100, size=(N_SIM, 2 * N_SIM))
    final, _, sent = _reference_ring(buffers)
    assert (final == buffers.sum(0)).all()
    out = _stdout("ring41a-02")
    assert f"sum of the {N_SIM} buffers: {buffers.sum(0).tolist()}" in out
    assert "every GPU ends with it: True" in out
    assert f"holds the full sum of chunk (r + 1) mod {N_SIM}: True" in out
    m = buffers[0].nbytes  # 8 int64 numbers
    assert m == 64 and sent == [2 * (N_SIM - 1)] * N_SIM
    sent_bytes = sent[0] * m // N_SIM
    assert sent_bytes == 2 * (N_SIM - 1) * m // N_SIM == 96
    assert f"each GPU sent {sent} chunks of {m // N_SIM} bytes = {sent_bytes} bytes" in out


def _time_rows():
    rows = {}
    for line in _stdout("ring41a-04").splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            rows[int(parts[0])] = parts[1:]
    return rows


@pytest.mark.parametrize("n", [2, 4, 8, 16, 64])
def test_time_table_row(n):
    m = BATCH * D_MODEL * BF16
    lat = 2 * (n - 1) * ALPHA
    bw = 2 * (n - 1) / n * m / BETA
    steps, lat_us, bw_us, t_us, share, mstar = _time_rows()[n]
    assert int(steps) == 2 * (n - 1)
    assert lat_us == f"{1e6 * lat:.1f}"
    assert bw_us == f"{1e6 * bw:.2f}"
    assert t_us == f"{1e6 * (lat + bw):.1f}"
    assert float(share.rstrip("%")) == pytest.approx(100 * lat / (lat + bw), abs=0.05)
    assert mstar == f"{n * ALPHA * BETA / 1e6:.1f}"


def test_header_and_the_terms_scale_as_the_text_says():
    out = _stdout("ring41a-04")
    assert f"M = 1 MiB ({BATCH * D_MODEL * BF16} bytes)" in out and "alpha = 3.4 us" in out
    rows = _time_rows()
    bw = [float(rows[n][2]) for n in (2, 4, 8, 16, 64)]
    lat = [float(rows[n][1]) for n in (2, 4, 8, 16, 64)]
    assert bw[-1] < 2 * bw[0] < bw[-1] * 2.1  # bandwidth term: at most twice its n = 2 value
    assert lat[-1] / lat[0] == pytest.approx(63)  # latency term: linear in n - 1
    assert all(lt > b for lt, b in zip(lat, bw))  # a 1 MiB message is latency-bound at every n


# NCCL 2.30.7 tuning.cc: NVLink ring step constants (LL, LL128, Simple) and the ring's base latency;
# LL carries 4 data bytes per 8 (device.h ncclLLFifoLine), LL128 15 of 16 words (NCCL_LL128_LINESIZE)
HW_LAT_US = {"LL": 0.6, "LL128": 1.9, "Simple": 3.4}
EFF = {"LL": 0.5, "LL128": 15 / 16, "Simple": 1.0}
BASE_LL_US = 6.6
BASE_SIMPLE_US = 8.4  # tuning.cc baseLat, ring, Simple


@pytest.mark.parametrize("proto", ["LL", "LL128", "Simple"])
def test_protocol_bytes_share(proto):
    m = BATCH * D_MODEL * BF16
    row = next(ln.split() for ln in _stdout("ring41a-04b").splitlines() if ln.split()[:1] == [proto])
    assert row[1] == f"{HW_LAT_US[proto]:.1f}"
    for n, printed in zip((2, 8), row[2:4]):
        bw = 2 * (n - 1) / n * m / (EFF[proto] * BETA)
        share = bw / (bw + 2 * (n - 1) * HW_LAT_US[proto] * 1e-6)
        assert float(printed.rstrip("%")) == pytest.approx(100 * share, abs=0.05)
    if proto == "LL":  # bytes are a large share with the protocol NCCL would pick: the text's "mostly fixed", not "never bytes"
        assert 0.45 < share < 0.55
        assert glued(notebook("tensor_parallel"), "tpring_ll_bytes_8") == f"{share:.1%}"


def test_ll_8_gpus_with_base_latency_matches_the_table_above():
    m = BATCH * D_MODEL * BF16
    fixed = BASE_LL_US + 14 * HW_LAT_US["LL"]
    nbytes = 2 * 7 / 8 * m / (0.5 * BETA) * 1e6
    line = next(ln for ln in _stdout("ring41a-04b").splitlines() if ln.startswith("8 GPUs, LL"))
    assert f"{fixed:.1f} us fixed + {nbytes:.1f} us bytes = {fixed + nbytes:.1f} us" in line
    assert f"bytes {100 * nbytes / (fixed + nbytes):.1f}%" in line


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_tree_crossover_is_not_m_star(n):
    # tree: 2 log2 n steps, 2 M bytes; ring: 2 (n - 1) steps, 2 (n - 1) / n M: solve T_tree = T_ring for M
    cross = (2 * (n - 1) - 2 * np.log2(n)) * ALPHA / ((2 - 2 * (n - 1) / n) / BETA)
    rows = {int(p[0]): p[1:] for p in (ln.split() for ln in _stdout("ring41a-04b").splitlines())
            if p and p[0].isdigit()}
    assert rows[n][0] == f"{n * ALPHA * BETA / 1e6:.1f}"
    assert rows[n][1] == f"{cross / 1e6:.1f}"
    if n == 8:
        assert cross > 4 * n * ALPHA * BETA * 0.99  # four times M* at 8 GPUs


def test_glue():
    """Every ``tpring_*`` value the prose renders, recomputed from the constants above with the cells' formats."""
    m = BATCH * D_MODEL * BF16

    def lat(n, a=ALPHA):
        return 2 * (n - 1) * a

    def bw(n, eff=1.0):
        return 2 * (n - 1) / n * m / (eff * BETA)

    def bytes_share(proto, n):
        return bw(n, EFF[proto]) / (bw(n, EFF[proto]) + lat(n, HW_LAT_US[proto] * 1e-6))

    def mtree(n):
        return n * ALPHA * BETA * (n - 1 - np.log2(n))

    ll8_fixed = (BASE_LL_US + 14 * HW_LAT_US["LL"]) * 1e-6
    want = {
        "tpring_chunks_sent": f"{2 * (N_SIM - 1)}",
        "tpring_alpha_us": f"{1e6 * ALPHA:.1f}",
        "tpring_bw_2": f"{1e6 * bw(2):.2f}", "tpring_bw_64": f"{1e6 * bw(64):.2f}",
        "tpring_lat_2": f"{1e6 * lat(2):.1f}", "tpring_lat_64": f"{1e6 * lat(64):.1f}",
        "tpring_share_2": f"{lat(2) / (lat(2) + bw(2)):.1%}", "tpring_share_8": f"{lat(8) / (lat(8) + bw(8)):.1%}",
        "tpring_base_simple_us": f"{BASE_SIMPLE_US:.1f}",
        "tpring_mstar_8": f"{8 * ALPHA * BETA / 1e6:.1f}",
        "tpring_ll_bytes_2": f"{bytes_share('LL', 2):.1%}", "tpring_ll_bytes_8": f"{bytes_share('LL', 8):.1%}",
        "tpring_ll128_bytes_8": f"{bytes_share('LL128', 8):.1%}",
        "tpring_ll8_fixed_us": f"{1e6 * ll8_fixed:.1f}", "tpring_ll8_bytes_us": f"{1e6 * bw(8, EFF['LL']):.1f}",
        "tpring_ll8_bytes_share": f"{bw(8, EFF['LL']) / (ll8_fixed + bw(8, EFF['LL'])):.1%}",
        "tpring_mtree_8": f"{mtree(8) / 1e6:.1f}", "tpring_mtree_16": f"{mtree(16) / 1e6:.0f}",
    }
    nb = notebook("tensor_parallel")
    assert {k: glued(nb, k) for k in want} == want
