"""Section gpu_kernels-sm-sp-warp: SPs (FP32 lanes) of an H100 SXM from the whitepaper's 132 SMs x 128 FP32
cores in 4 partitions, and the clock the datasheet's 67 TFLOPS FP32 implies; compared with the stored output."""
import json
import pathlib

NB = pathlib.Path(__file__).parents[1] / "book" / "gpu_kernels.ipynb"
SMS, LANES_PER_SM, PARTITIONS, WARP = 132, 128, 4, 32
FP32_PEAK = 67e12


def _stdout():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if "SP = CUDA core" in "".join(c["source"]))
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")


def test_lanes_per_partition_equal_a_warp():
    assert LANES_PER_SM // PARTITIONS == WARP
    assert f"{LANES_PER_SM} per SM = {PARTITIONS} partitions x {WARP}; a warp of 32 threads fills one " \
           "partition's lanes: True" in _stdout()


def test_total_sps_and_flops_per_clock():
    sps = SMS * LANES_PER_SM
    assert sps == 16_896
    assert f"= {sps:,} SPs; x 2 FLOPs = {2 * sps:,} FP32 FLOPs a clock" in _stdout()


def test_implied_clock():
    clock = FP32_PEAK / (2 * SMS * LANES_PER_SM)
    assert 1.9e9 < clock < 2.0e9
    assert f"= {clock / 1e9:.2f} GHz; back: 67.0 TFLOPS" in _stdout()
