"""Section first_principles-contiguous: why merging heads after transpose(1, 2) needs .contiguous() before view.

Recomputed here from the stride rule of torch.Tensor.view (a view may merge dimensions i..i+k only where
stride[j] == stride[j+1] * size[j+1]) and the strides of a row-major tensor, not through the chapter's numpy cell.
"""
import math

from tests.chapter_outputs import glued, notebook, printed, section

NB = notebook("first_principles")
B, H, DH = 2, 2, 4  # the cell's batch, heads and head size


def _row_major(shape):
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def _transposed_back(n):
    """Strides of a fresh row-major (b, h, n, d_h) tensor after transpose(1, 2): (b, n, h, d_h)."""
    s = _row_major((B, H, n, DH))
    return (s[0], s[2], s[1], s[3])


def _view_merges_last_two(shape, strides):
    return strides[-2] == strides[-1] * shape[-1]


def test_stride_arithmetic_in_the_printed_lines():
    out = printed(NB, "def view_can_merge_last_two(")
    st3 = _transposed_back(3)
    assert st3 == (H * 3 * DH, DH, 3 * DH, 1) == (24, 4, 12, 1)
    assert not _view_merges_last_two((B, 3, H, DH), st3)
    assert (f"merge: (b, n, h, d_h) strides {st3}, C-contiguous: False, view(b, n, d) allowed: False, "
            "reshape copied: True") in out
    assert "n = 3: split is a view of x: True, C-contiguous: False" in out
    # one token: n * d_h == d_h, so the rule holds and nothing is copied
    st1 = _transposed_back(1)
    assert _view_merges_last_two((B, 1, H, DH), st1)
    assert "view(b, n, d) allowed: True, reshape copied: False" in out
    # the output is a fresh copy even at n = 1, so its strides follow the formula (h n d_h, d_h, n d_h, 1)
    assert st1 == (H * DH, DH, DH, 1) == (8, 4, 4, 1)
    assert f"merge: (b, n, h, d_h) strides {st1}, C-contiguous: True, view(b, n, d) allowed: True" in out
    assert glued(NB, "fp_ct_strides") == str(st3)


def test_split_is_always_a_view():
    # view(b, n, h, d_h) cuts the last dim of a row-major (b, n, d): the cut dims keep row-major strides
    for n in (1, 3, 8):
        full = _row_major((B, n, H * DH))
        assert _row_major((B, n, H, DH)) == (full[0], full[1], DH, 1)


def test_merge_view_fails_for_every_prompt_longer_than_one():
    for n in range(2, 64):
        assert not _view_merges_last_two((B, n, H, DH), _transposed_back(n))


def test_section_place_cites_and_form():
    text = section(NB, "first_principles-contiguous", "first_principles-chain")
    for key in ("pytorchtensorviews", "pytorchtensorcontiguous", "numpyreshape"):
        assert f"{key}" in text
    assert "In the interview" in text and "**Drill.**" in text
    assert "{ref}`cuda_basics-strides`" in text and "PyTorch is not run" in text
    assert "`torch.matmul` reshapes it" in text and "scaled_dot_product_attention" in text
    assert ":class: dropdown" not in text  # the whiteboard section's three dropdowns stay three
    whole = section(NB, "first_principles-whiteboard", "first_principles-chain")
    assert whole.index("(first_principles-contiguous)=") > whole.index("def mha_forward(")
