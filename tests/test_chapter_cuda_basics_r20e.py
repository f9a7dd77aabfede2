"""Section cuda_basics-stack: the minimum driver branch of each CUDA major release and which PyTorch
wheel runs on which driver (CUDA Compatibility, "Minor Version Compatibility", Table 1)."""
import json
import pathlib
import re

import pytest

# Table 1, restated as half-open driver-branch ranges: [minimum, upper bound of minor-version compatibility)
RANGES = {11: (450, 525), 12: (525, 580), 13: (580, None)}


def _runs(cuda_version, branch):
    """Backward compatibility plus minor-version compatibility: any branch at or above the family's minimum."""
    low, _ = RANGES[int(cuda_version.split(".")[0])]
    return not branch < low


def test_glued_minimum_branches():
    assert f"{RANGES[12][0]}" == "525"
    assert f"{RANGES[13][0]}" == "580"


def test_each_family_starts_where_the_previous_minor_version_range_ends():
    assert RANGES[11][1] == RANGES[12][0] and RANGES[12][1] == RANGES[13][0]


@pytest.mark.parametrize("cuda_version, branch, expected", [
    ("12.8", 535, True), ("12.8", 570, True), ("12.8", 580, True),
    ("13.0", 535, False), ("13.0", 570, False), ("13.0", 580, True),
])
def test_wheel_on_driver(cuda_version, branch, expected):
    assert _runs(cuda_version, branch) is expected


def test_no_driver_in_the_12x_minor_version_range_runs_a_13x_wheel():
    low, high = RANGES[12]
    assert not any(_runs("13.0", b) for b in range(low, high))
    assert all(_runs("12.8", b) for b in range(low, high))


def test_the_glued_old_branch_runs_cu128_but_not_cu130():
    assert _runs("12.8", 570) and not _runs("13.0", 570)


def test_the_chapters_table_matches_the_documented_minima():
    nb = json.loads((pathlib.Path(__file__).parents[1] / "book" / "cuda_basics.ipynb").read_text())
    src = next("".join(c["source"]) for c in nb["cells"] if "MIN_DRIVER_BRANCH = {" in "".join(c["source"]))
    table = dict((int(k), int(v)) for k, v in re.findall(r"(\d+): (\d+)", src.split("MIN_DRIVER_BRANCH = ")[1].split("}")[0]))
    assert table == {12: RANGES[12][0], 13: RANGES[13][0]}
