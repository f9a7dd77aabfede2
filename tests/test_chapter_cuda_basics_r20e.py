"""Section cuda_basics-stack: minimum driver branch of each CUDA major release (CUDA Compatibility, "Minor
Version Compatibility", Table 1), binary compatibility of SASS and PTX (nvcc guide, Programming Guide), and
the PyTorch 2.12-2.14 Linux x86 wheels' architecture lists (RELEASE.md "PyTorch CUDA Support Matrix")."""
import json
import pathlib

import pytest

NB = pathlib.Path(__file__).parents[1] / "book" / "cuda_basics.ipynb"

# Table 1, restated as half-open driver-branch ranges: [minimum, upper bound of minor-version compatibility)
RANGES = {11: (450, 525), 12: (525, 580), 13: (580, None)}
# Support matrix, written as (major, minor) compute capabilities, and the PTX target
ARCHES = {
    "12.6": ({(5, 0), (6, 0), (7, 0), (7, 5), (8, 0), (8, 6), (9, 0)}, None),
    "13.0": ({(7, 5), (8, 0), (8, 6), (9, 0), (10, 0), (12, 0)}, (12, 0)),
    "13.2": ({(7, 5), (8, 0), (8, 6), (9, 0), (10, 0), (12, 0)}, (12, 0)),
}
CC = {"V100": (7, 0), "L40S": (8, 9), "H100": (9, 0), "B200": (10, 0)}


def _driver_ok(cuda_version, branch):
    low, _ = RANGES[int(cuda_version.split(".")[0])]
    return not branch < low


def _has_image(cuda_version, gpu):
    sass, ptx = ARCHES[cuda_version]
    major, minor = CC[gpu]
    same_family = [m for (M, m) in sass if M == major and m <= minor]
    return bool(same_family) or (ptx is not None and ptx <= (major, minor))


def _stored_lines():
    nb = json.loads(NB.read_text())
    cell = next(c for c in nb["cells"] if "def wheel_runs(" in "".join(c["source"]))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    return text.strip().splitlines()


def test_glued_minimum_branches_and_arches():
    assert f"{RANGES[12][0]}" == "525"
    assert f"{RANGES[13][0]}" == "580"
    assert "sm_" + "".join(map(str, max(ARCHES["12.6"][0]))) == "sm_90"
    assert "sm_" + "".join(map(str, min(ARCHES["13.0"][0]))) == "sm_75"


def test_each_family_starts_where_the_previous_minor_version_range_ends():
    assert RANGES[11][1] == RANGES[12][0] and RANGES[12][1] == RANGES[13][0]


@pytest.mark.parametrize("cuda_version, branch, gpu, driver_ok, image", [
    ("12.6", 535, "H100", True, True), ("12.6", 580, "V100", True, True),
    ("12.6", 580, "L40S", True, True), ("12.6", 580, "B200", True, False),
    ("13.0", 535, "H100", False, True), ("13.0", 580, "V100", True, False),
    ("13.0", 580, "L40S", True, True), ("13.0", 580, "B200", True, True),
    ("13.2", 580, "V100", True, False), ("13.2", 580, "B200", True, True),
])
def test_wheel_on_host(cuda_version, branch, gpu, driver_ok, image):
    assert _driver_ok(cuda_version, branch) is driver_ok
    assert _has_image(cuda_version, gpu) is image


def test_sm86_sass_covers_sm89_but_not_across_majors():
    assert _has_image("12.6", "L40S")  # 8.6 SASS on an 8.9 GPU, no PTX in the wheel
    assert not _has_image("12.6", "B200")  # 9.0 SASS does not run on 10.0


def test_no_driver_in_the_12x_minor_version_range_runs_a_13x_wheel():
    low, high = RANGES[12]
    assert not any(_driver_ok("13.0", b) for b in range(low, high))
    assert all(_driver_ok("12.6", b) for b in range(low, high))


def test_the_chapters_printed_table():
    assert _stored_lines() == [
        "torch+cu126 (CUDA 12.6), R535, H100: runs (SASS, minor-version compatibility)",
        "torch+cu126 (CUDA 12.6), R580, V100: runs (SASS)",
        "torch+cu126 (CUDA 12.6), R580, L40S: runs (SASS)",
        "torch+cu126 (CUDA 12.6), R580, B200: no kernel image for this GPU (error 209)",
        "torch+cu130 (CUDA 13.0), R535, H100: needs R580+ (or cuda-compat-13-x, data-centre GPUs only)",
        "torch+cu130 (CUDA 13.0), R580, V100: no kernel image for this GPU (error 209)",
        "torch+cu130 (CUDA 13.0), R580, L40S: runs (SASS)",
        "torch+cu130 (CUDA 13.0), R580, B200: runs (SASS)",
        "torch+cu132 (CUDA 13.2), R535, H100: needs R580+ (or cuda-compat-13-x, data-centre GPUs only)",
        "torch+cu132 (CUDA 13.2), R580, V100: no kernel image for this GPU (error 209)",
        "torch+cu132 (CUDA 13.2), R580, L40S: runs (SASS)",
        "torch+cu132 (CUDA 13.2), R580, B200: runs (SASS)",
    ]


def test_the_chapters_tables_match_the_documented_values():
    nb = json.loads(NB.read_text())
    src = next("".join(c["source"]) for c in nb["cells"] if "def wheel_runs(" in "".join(c["source"]))
    ns = {}
    exec(src.split("def code_for")[0], ns)
    assert ns["MIN_DRIVER_BRANCH"] == {12: RANGES[12][0], 13: RANGES[13][0]}
    for tag, (cuda_version, sass, ptx) in ns["WHEELS"].items():
        assert tag == "cu" + cuda_version.replace(".", "")
        assert {divmod(s, 10) for s in sass} == ARCHES[cuda_version][0]
        assert (None if ptx is None else divmod(ptx, 10)) == ARCHES[cuda_version][1]
    assert {g: divmod(c, 10) for g, c in ns["GPU_CC"].items()} == CC
