"""Section serving_operations-chat-store of "Serving in production": the conversation store of a chat with Claude.

The storage and write-rate table recomputed from the assumptions written out here (and checked to be the ones the
cell states), with Llama 3 70B's KV bytes per token taken from the kit's model record by the formula
2 (K and V) x layers x KV heads x head size x 2 bytes (not through mk.kv_cache_bytes_per_token); the glued values
against the same numbers; the links, citations and drill-card rubrics the section rests on.
"""
import re

import pytest
import chapter_outputs
import mha_kit as mk
from test_chapter_chains import rubric_problems

NB = chapter_outputs.notebook("serving_operations")
LABEL = "serving_operations-chat-store"
TEXT = chapter_outputs.section(NB, LABEL, "## Around the engines")
MARKER = "CONVS_PER_USER = 3"
TABLE = chapter_outputs.printed(NB, MARKER)

# the cell's assumptions, restated
DAU, CONVS, TURNS, TOK_USER, TOK_REPLY = 20_000_000, 3, 5, 50, 350
BYTES_PER_TOKEN, ROW_BYTES, REPLICAS, CKPT, NODE_TB = 4, 100, 3, 64, 3
CFG = mk.MODEL_FACTS["llama-3-70b"].config
KV_TOK = 2 * CFG.num_layers * CFG.num_kv_heads * CFG.head_dim * 2  # K and V, bf16

TURNS_DAY = DAU * CONVS * TURNS
MSGS, TOKS = 2 * TURNS_DAY, TURNS_DAY * (TOK_USER + TOK_REPLY)
TEXT_BYTES = TOKS * BYTES_PER_TOKEN + MSGS * ROW_BYTES
KV_BYTES = TOKS * KV_TOK


def human(nbytes):  # three significant figures in the largest decimal unit that fits
    for unit, exp in (("EB", 18), ("PB", 15), ("TB", 12), ("GB", 9)):
        if nbytes >= 10**exp:
            return f"{nbytes / 10**exp:.3g} {unit}"
    raise ValueError(nbytes)


def glued(key):
    return chapter_outputs.glued(NB, key)


def test_assumptions_are_the_cells():
    source = "".join(chapter_outputs._code_cell(NB, MARKER)["source"])
    for line in ("DAU = 20_000_000", "CONVS_PER_USER = 3", "TURNS = 5", "TOK_USER, TOK_REPLY = 50, 350",
                 "BYTES_PER_TOKEN = 4", "ROW_BYTES = 100", "REPLICAS = 3", "CKPT = 64", "NODE_TB = 3", '"llama-3-70b"'):
        assert line in source, line


def test_kv_bytes_per_token_from_the_record():
    assert (CFG.num_layers, CFG.num_kv_heads, CFG.head_dim) == (80, 8, 128)  # Llama 3 70B config.json
    assert KV_TOK == 327_680
    assert f"({KV_TOK // 1024} KiB a token)" in TABLE


@pytest.mark.parametrize("name, day, fmt", [
    ("messages", MSGS, "{:,}".format),
    ("tokens", TOKS, "{:,}".format),
    ("text, one copy", TEXT_BYTES, human),
    ("text, 3 replicas", REPLICAS * TEXT_BYTES, human),
    ("KV cache if kept (Llama 3 70B)", KV_BYTES, human),
])
def test_storage_rows(name, day, fmt):
    assert re.search(rf"^{re.escape(name)}\s+{re.escape(fmt(day))}\s+{re.escape(fmt(365 * day))}$", TABLE, re.M), name


def test_exact_counts():
    assert (MSGS, TOKS, TEXT_BYTES) == (600_000_000, 120_000_000_000, 540_000_000_000)
    assert 365 * MSGS == 219_000_000_000
    assert glued("so_cs_msgs_day") == "600,000,000"


def test_text_is_tiny_kv_is_not():
    assert glued("so_cs_text_day") == human(TEXT_BYTES) == "540 GB"
    assert glued("so_cs_text_year") == human(365 * REPLICAS * TEXT_BYTES) == "591 TB"
    assert glued("so_cs_kv_day") == human(KV_BYTES) == "39.3 PB"
    assert glued("so_cs_ratio") == f"{KV_BYTES / TEXT_BYTES:,.0f}" == "72,818"
    conv_tok = TURNS * (TOK_USER + TOK_REPLY)
    conv_text = conv_tok * BYTES_PER_TOKEN + 2 * TURNS * ROW_BYTES
    assert glued("so_cs_conv_kv") == f"{conv_tok * KV_TOK / 1e6:,.0f}" == "655"
    assert f"one conversation, {conv_tok:,} tokens: {conv_text:,} bytes of text" in TABLE
    nodes = 365 * REPLICAS * TEXT_BYTES / (NODE_TB * 10**12)  # a year of replicated text, uncompressed
    assert glued("so_cs_nodes") == f"{nodes:,.0f}" == "197"
    assert f"uncompressed: {nodes:,.0f}" in TABLE
    assert KV_BYTES / TEXT_BYTES > 50_000  # the section's claim: keep the text, recompute or tier the KV


def test_write_rates():
    per_turn = {"every token": 2 + TOK_REPLY, "every 64 tokens": 2 + -(-TOK_REPLY // CKPT), "at the end only": 3}
    assert per_turn["every 64 tokens"] == 8  # checkpoints at 64, 128, ..., 320 and the final write at 350
    for name, n in per_turn.items():
        rate = f"{TURNS_DAY * n / 86_400:,.0f}"
        assert re.search(rf"saved\s+{name}:\s+{rate} \(mean over a day\)", TABLE), name
    assert glued("so_cs_w_token") == f"{TURNS_DAY * (2 + TOK_REPLY) / 86_400:,.0f}" == "1,222,222"
    assert glued("so_cs_w_ckpt") == f"{TURNS_DAY * 8 / 86_400:,.0f}" == "27,778"
    # the end-only row on its own: the user's message, the reply and the conversation's row, once a turn
    end_only = re.search(r"saved\s+at the end only:\s+([\d,]+) \(mean over a day\)", TABLE).group(1)
    assert end_only == f"{TURNS_DAY * per_turn['at the end only'] / 86_400:,.0f}"


def test_links_and_citations():
    for ref in ("serving_operations-streaming-transport", "serving_operations-guard-models",
                "prefix_caching-growing-conversation", "prefix_caching-routing", "serving_operations-chat-templates"):
        assert f"{{ref}}`{ref}`" in TEXT, ref
    for key in ("discordbillions2017", "discordtrillions2023", "ulidspec", "datastaxconsistency", "whatwgsse",
                "datastaxwhereclustering", "willison2023discord", "cassandratombstones"):
        assert f"`{key}{{" in TEXT, key
    assert "((conversation_id, bucket), message_id)" not in TEXT  # seq, not the id, is the clustering column
    assert "go to the leader" not in TEXT  # Cassandra is leaderless
    assert "discordtrillions2023{the data services" not in TEXT  # that section was read only as quoted
    for claim in ("((conversation_id, bucket), seq)", "bucket = seq / 10,000", "keyed by `conversation_id`",
                  "client-side fence", "`seq`", "parent_id", "client_msg_id",
                  "status = streaming", "interrupted", "current_leaf_id", "QUORUM"):
        assert claim in TEXT, claim


def test_drill_cards():
    cards = TEXT.split(":::{admonition}")[1:]
    assert [c.split("\n", 1)[0][:4] for c in cards] == [" [E]", " [M]", " [H]"]
    for card in cards:
        assert ":class: dropdown" in card
        answer = card.split("**Strong answer.**", 1)[1].split("**Listening for.**", 1)[0]
        rubric = card.split("**Listening for.**", 1)[1].split("**Trap.**", 1)[0]
        assert rubric_problems(answer, rubric) == []
