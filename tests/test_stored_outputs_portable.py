"""Stored notebook outputs print nothing that changes from one CPU to the next.

nbval compares every re-executed output with the stored one, character for character. The size of a
rounding error (``8.9e-16`` here, ``1.0e-15`` on a machine whose numpy picks other SIMD kernels, or
whose BLAS blocks a product differently) is such an output: CI runs on whatever machine it gets, so
a notebook that stores one fails there and nothing lands. Chapters print ``mk.format_difference``
("below 1e-12") or a bool instead; this test fails on any stored float below 1e-12 written in
scientific notation, so the next chapter cannot bring one back.
"""
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(REPO.glob("book/*.ipynb")) + sorted(REPO.glob("solutions/*/*.ipynb"))
#: Smallest magnitude a stored output may print in scientific notation.
FLOOR = 1e-12
#: Limits of number formats that a chapter may print (the same on every machine): the smallest normal
#: and subnormal numbers of float64, float32 and bfloat16. All lie below 1e-30, far under any
#: rounding error of numbers of order one, so no rounding noise can pass for one of them.
FORMAT_LIMITS = {2.0**-1022: "float64 smallest normal", 2.0**-1074: "float64 smallest subnormal",
                 2.0**-126: "float32 and bfloat16 smallest normal", 2.0**-149: "float32 smallest subnormal",
                 2.0**-133: "bfloat16 smallest subnormal"}
#: A number in scientific notation, not part of a longer word or number (a base64 image, an id).
SCIENTIFIC = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d*)?[eE][-+]?\d+(?![\w.])")
#: Output parts that hold text a reader sees (images are compared by nbval as images, not here).
TEXT_KINDS = ("text/plain", "text/html", "text/markdown", "text/latex")


def output_texts(cell):
    """Every text a code cell's stored outputs show."""
    for output in cell.get("outputs", []):
        if "text" in output:  # a stream
            yield "".join(output["text"])
        for kind in TEXT_KINDS:
            if kind in output.get("data", {}):
                value = output["data"][kind]
                yield "".join(value) if isinstance(value, list) else value


def is_format_limit(text):
    """Whether ``text`` ("1.18e-38") prints one of :data:`FORMAT_LIMITS` to its own precision."""
    mantissa = text.lower().split("e")[0].lstrip("+-")
    digits = len(mantissa.replace(".", "").lstrip("0")) or 1
    value = abs(float(text))
    return any(abs(value - limit) <= 0.5 * 10 ** (1 - digits) * limit for limit in FORMAT_LIMITS)


def noise(notebook):
    """``[(cell index, number)]``: the rounding-sized numbers a notebook's stored outputs print."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        for text in output_texts(cell):
            found += [(index, m) for m in SCIENTIFIC.findall(text)
                      if 0 < abs(float(m)) < FLOOR and not is_format_limit(m)]
    return found


def _notebook(*texts):
    cells = [{"cell_type": "code", "outputs": [{"name": "stdout", "output_type": "stream", "text": [t]}]}
             for t in texts]
    return {"cells": cells}


def test_the_scan_flags_the_output_that_broke_ci():
    # book/serving_kv_cache.ipynb stored this line until CI on another EPYC printed 8.9e-16
    stored = _notebook("tokens held after each step: [4, 4]\n", "largest difference: 1.0e-15\n")
    assert noise(stored) == [(1, "1.0e-15")]


@pytest.mark.parametrize("text, flagged", [
    ("max difference 8.9e-16)", ["8.9e-16"]),
    ("error 3E-13 and 2.5e-17", ["3E-13", "2.5e-17"]),
    ("largest difference: below 1e-12", []),  # the bound itself, not noise
    ("rate 2.1e+12 FLOP/s, step 4.5e-03 s", []),  # large or ordinary numbers
    ("0.0000000000001", []),  # not scientific notation: a fixed format prints the same everywhere
    ("data:image/png;base64,AAe-15xyz", []),  # part of a longer token
    ("smallest normal 1.18e-38 and 1.4e-45", []),  # float32's limits: constants, not rounding
    ("smallest normal 1.19e-38", ["1.19e-38"]),  # close to a limit is not the limit
    ("noise 8.9e-16 = 2**-50", ["8.9e-16"]),  # rounding is often a power of two: still noise
])
def test_the_scan_reads_numbers_not_words(text, flagged):
    assert [number for _, number in noise(_notebook(text))] == flagged


def test_the_scan_reads_rich_outputs_too():
    cell = {"cell_type": "code", "outputs": [{"output_type": "execute_result",
                                              "data": {"text/plain": ["np.float64(8.9e-16)"]}}]}
    assert noise({"cells": [cell]}) == [(0, "8.9e-16")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_stored_outputs_print_no_rounding_noise(path):
    found = noise(json.loads(path.read_text(encoding="utf-8")))
    assert not found, (f"{path.relative_to(REPO)} stores rounding-sized numbers that differ from CPU to CPU "
                       f"(cell index, number): {found}; print mk.format_difference(...) or a bool instead")
