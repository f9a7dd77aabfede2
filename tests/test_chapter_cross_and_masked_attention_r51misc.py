"""Section cross_and_masked_attention-which-family: autoencoding / autoregressive / sequence-to-sequence mapped onto
encoder-only, decoder-only and encoder-decoder (Hugging Face model summary and LLM course; Devlin et al. 2019 §3.1)."""
import chapter_outputs

NB = chapter_outputs.notebook("cross_and_masked_attention")


def test_family_names():
    text = chapter_outputs.section(NB, "cross_and_masked_attention-which-family", end="cross_and_masked_attention-bert-mask")
    for name in ("**autoregressive**", "**autoencoding**", "**sequence-to-sequence**"):
        assert name in text
    chapter_outputs.assert_cited(text, ["hfmodelsummary48", "hfcoursech1", "devlin2019bert"])
    assert "devlin2019bert{§3.1, Task 1: Masked LM}" in text
    chapter_outputs.assert_links(text, ["cross_and_masked_attention-bert-mask"])
    assert "names an autoencoding model" in text and "Follow-up: is T5 autoencoding or autoregressive?" in text
