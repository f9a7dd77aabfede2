"""Section position_encodings-learned-absolute: the dropdown on why BERT could use a learned table.

Checks the claims against the sources' own numbers: BERT's max_position_embeddings = 512 (google-research/bert
modeling.py), GPT-1's released position table of shape [512, 768] (openai/finetune-transformer-lm
model/params_shapes.json), and that the dropdown says BERT's paper gives no reason rather than inventing one.
"""
from pathlib import Path

import chapter_outputs

BERT_MAX_POSITIONS = 512
GPT1_POSITIONS, GPT1_WIDTH = 512, 768


def section():
    nb = chapter_outputs.notebook("position_encodings")
    return chapter_outputs.section(nb, "position_encodings-learned-absolute", end="position_encodings-learned-init",
                                   kinds=("markdown",))


def test_dropdown_claims():
    text = section()
    start = text.index("Why could BERT use a learned table")
    box = text[start:text.index(":::", start + 1)]
    assert ":class: dropdown" in box and "followup" not in box.split("\n")[1]
    assert "gives no reason" in box
    assert f"{BERT_MAX_POSITIONS} rows" in box and f"{GPT1_POSITIONS} rows of width {GPT1_WIDTH}" in box
    assert "{ref}`position_encodings-learned-generate`" in box
    assert "Table 3 row (E)" in box
    bib = (Path(__file__).resolve().parent.parent / "references.bib").read_text(encoding="utf-8")
    for key in ("openaifinetunelm", "googlebertcode", "devlin2019bert", "vaswani2017attention"):
        assert f"{{{key}," in bib and f"{key}{{" in box
    assert "[512, 768]" in bib  # params_0 in params_shapes.json
