"""tensor_parallel-collectives: the eight NCCL collectives and send/recv on four ranks, recomputed here in plain
Python from their definitions in NCCL 2.30.7's nccl.h (rank i's result of each primitive) and compared with the
chapter's printed table, plus the identities it prints and the section's links and citations."""
import re

import pytest

import chapter_outputs

R, ROOT = 4, 0
X = [[10 * r + i for i in range(R)] for r in range(R)]  # rank r's buffer: R blocks of one element
OWN = [[X[r][r]] for r in range(R)]  # the block each rank sends to gather and all-gather
SUM = [sum(X[r][i] for r in range(R)) for i in range(R)]

EXPECTED = {  # nccl.h: what rank i holds after each call ([] = nothing received)
    "broadcast": [X[ROOT]] * R,  # copies count values from root to all
    "scatter": [[X[ROOT][i]] for i in range(R)],  # root's block i goes to rank i
    "gather": [[b[0] for b in OWN] if i == ROOT else [] for i in range(R)],  # rank i's data at root's offset i
    "reduce": [SUM if i == ROOT else [] for i in range(R)],
    "all-reduce": [SUM] * R,
    "reduce-scatter": [[SUM[i]] for i in range(R)],  # rank i gets the i-th block of the result
    "all-gather": [[b[0] for b in OWN]] * R,
    "all-to-all": [[X[i][j] for i in range(R)] for j in range(R)],  # from rank i, block j, at offset i
    "send/recv 0 -> 1": [X[0], X[0], X[2], X[3]],
}


@pytest.fixture(scope="module")
def nb():
    return chapter_outputs.notebook("tensor_parallel")


def _row(out, name):
    line = next(s for s in out.splitlines() if s.startswith(name + " ") and len(s) > 18)
    cells = [line[18 + 16 * r: 18 + 16 * (r + 1)].strip() for r in range(R)]
    return [[] if c == "-" else [int(v) for v in c.split()] for c in cells]


@pytest.mark.parametrize("name", EXPECTED)
def test_each_primitive_leaves_what_nccl_defines(nb, name):
    out = chapter_outputs.printed(nb, "def reduce_scatter(bufs)")
    assert _row(out, name) == EXPECTED[name]


def test_inputs_and_identities(nb):
    out = chapter_outputs.printed(nb, "def reduce_scatter(bufs)")
    assert _row(out, "before (x_r)") == X
    assert _row(out, "gather/all-gather") == OWN
    # all-gather of the reduce-scatter is the all-reduce; reduce then broadcast is too; all-to-all is an involution
    rs_ag = [[SUM[i] for i in range(R)] for _ in range(R)]
    a2a = EXPECTED["all-to-all"]
    assert rs_ag == EXPECTED["all-reduce"] and [[a2a[i][j] for i in range(R)] for j in range(R)] == X
    for line in ("all-gather(reduce-scatter(x)) == all-reduce(x): True", "broadcast(reduce(x)) == all-reduce(x): True",
                 "all-to-all applied twice returns x: True"):
        assert line in out
    assert chapter_outputs.glued(nb, "tp_coll_sum") == " ".join(map(str, SUM)) == "60 64 68 72"
    assert sorted(v for b in a2a for v in b) == sorted(v for b in X for v in b)  # the same values, moved
    assert chapter_outputs.glued(nb, "tp_coll_n_values") == str(R * R) == "16"


def test_section_links_citations_and_boxes(nb):
    text = chapter_outputs.section(nb, "tensor_parallel-collectives", end="tensor_parallel-move-activations")
    for ref in ("tensor_parallel-ring-steps", "tensor_parallel-ring-tree", "tensor_parallel-all-reduce",
                "tensor_parallel-sequence-parallel", "tensor_parallel-ep-layouts", "tensor_parallel-ddp-buckets",
                "tensor_parallel-zero", "tensor_parallel-pipeline-bubble", "tensor_parallel-p2p",
                "tensor_parallel-nccl-hang", "tensor_parallel-nccl-bootstrap",
                "context_parallelism-ring", "context_parallelism-ulysses"):
        assert "{ref}`" + ref + "`" in text and ref in chapter_outputs.book_labels(), ref
    chapter_outputs.assert_cited(text, ["ncclcollectives", "ncclguide", "liu2023ring", "jacobs2023ulysses"])
    for prim in ("broadcast", "scatter", "gather", "reduce", "all-reduce", "reduce-scatter", "all-gather", "all-to-all"):
        assert re.search(rf"^\| {prim} \|", text, re.M), prim  # one row of the taxonomy table each
    assert "In the interview" in text and ":class: dropdown" in text
    assert "2.30.7" in text  # the setting: which NCCL's definitions
