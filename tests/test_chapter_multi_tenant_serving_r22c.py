"""Section multi_tenant_serving-weight-distribution-design of "Many models, adapters and tenants".

The fan-out numbers for a 405B-class checkpoint, recomputed from Llama 3.1 405B's shape written out
(config.json), the DGX H100 datasheet's constants and the section's stated assumptions, not through
mha_kit, and compared with the values the chapter glues.
"""
import json
import math
import pathlib
import chapter_outputs

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
LABEL = "(multi_tenant_serving-weight-distribution-design)="

# Llama 3.1 405B (config.json): 126 layers, d 16384, 128 query heads and 8 KV heads of 128,
# MLP 53248, vocabulary 128256, untied output head; RMSNorm weights included
L, D, H, KV, HD, FF, V = 126, 16384, 128, 8, 128, 53248, 128_256
PARAMS = V * D * 2 + L * (D * H * HD * 2 + 2 * D * KV * HD + 3 * D * FF + 2 * D) + D
W = 2 * PARAMS  # bf16 bytes
HBM, GPUS, SSD, DRIVE = 80e9, 8, 8 * 3.84e12, 8e9  # DGX H100: 8 x 80 GB; 8 x 3.84 TB NVMe on PCIe 4 x4
NODES, REGIONS, VERSIONS, ORIGIN, NODE_BW, CHUNK = 1000, 3, 4, 25e9, 25e9, 256 * 2**20  # assumptions


def glued(key):
    return chapter_outputs.glued(chapter_outputs.notebook("multi_tenant_serving"), key)


def test_checkpoint_and_replica():
    assert PARAMS == 405_853_388_800
    pp = 2  # 812 GB > 8 x 80 GB of HBM, and fits two nodes with 10% of HBM left over
    assert GPUS * HBM * 0.9 < W <= 2 * GPUS * HBM * 0.9
    assert glued("wd_w405_gb") == "812"
    assert glued("wd_pp") == str(pp)
    assert glued("wd_shard_gb") == f"{W / pp / 1e9:.0f}" == "406"


def test_fan_out_times():
    shard, group, share = W / 2, NODES // 2, ORIGIN / 2
    central = group * shard / share  # each stage's 500 nodes share the origin's half
    chain = shard / min(share, NODE_BW) + (group - 1) * CHUNK / NODE_BW
    tree = max(shard / share, 2 * shard / NODE_BW) + math.ceil(math.log2(group)) * 2 * CHUNK / NODE_BW
    floor = max(shard / NODE_BW, shard / share, group * shard / (share + group * NODE_BW))
    assert glued("wd_central_h") == f"{central / 3600:.1f}" == "4.5"
    assert glued("wd_chain_s") == f"{chain:.0f}" == "38"
    assert glued("wd_tree_s") == f"{tree:.0f}" == "33"
    assert glued("wd_floor_s") == f"{floor:.0f}" == "32"
    assert floor == shard / share  # the origin's one copy sets the floor, not the fleet's size
    assert floor <= tree <= chain < central


def test_egress_disk_rollback():
    shard = W / 2
    assert glued("wd_egress_central_tb") == f"{NODES * shard / 1e12:.0f}" == "406"
    assert glued("wd_day_central_pb") == f"{VERSIONS * REGIONS * NODES * shard / 1e15:.1f}"
    assert glued("wd_day_p2p_tb") == f"{VERSIONS * REGIONS * W / 1e12:.1f}" == "9.7"
    # cross-region: CI publishes in one region, so each version is copied into the other two origins
    assert glued("wd_day_xregion_tb") == f"{(REGIONS - 1) * VERSIONS * W / 1e12:.1f}" == "6.5"
    assert glued("wd_disk_tb") == f"{3 * shard / 1e12:.2f}" == "1.22"
    assert glued("wd_disk_frac") == f"{3 * shard / SSD:.0%}" == "4%"
    assert glued("wd_rollback_s") == f"{shard / (8 * DRIVE):.1f}" == "6.3"


def test_printed_lines():
    nb = chapter_outputs.notebook("multi_tenant_serving")
    lines = chapter_outputs.printed(nb, "cross_region = ").splitlines()
    per_day = next(ln for ln in lines if ln.startswith("per day (4 versions, 3 regions)"))
    rollback = next(ln for ln in lines if ln.startswith("rollback's bytes"))
    assert f"{VERSIONS * REGIONS * W / 1e12:.1f} TB peer to peer (inside each region)" in per_day
    assert f"plus {(REGIONS - 1) * VERSIONS * W / 1e12:.1f} TB of cross-region replication" in per_day
    assert "of which cross-region" not in per_day  # the old line counted the intra-region copies twice
    assert f"in {W / 2 / (8 * DRIVE):.1f} s at peak" in rollback and "restart and warm-up not included" in rollback


def test_section_links_and_boxes():
    nb = json.loads((BOOK / "multi_tenant_serving.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"]]
    start = next(i for i, s in enumerate(cells) if s.startswith(LABEL))
    after_base = cells[start - 3].startswith("(multi_tenant_serving-weight-distribution)=")
    assert after_base, "the design section follows the data-plane section"
    section = "\n".join(cells[start:start + 4])
    for ref in ("serving_reliability-rollouts", "serving_reliability-multi-region", "serving_reliability-drain",
                "serving_operations-hot-reload", "serving_operations-safetensors"):
        assert f"{{ref}}`{ref}`" in section
    assert section.count(":class: dropdown\n") == 3 and "followup" not in section
    assert "```{admonition} In the interview" in section
    # the control plane: a target alias, per-replica assignments, a break-glass pin for rollback
    assert "the only mutable" not in section and "resolve(alias)" not in section
    assert "`resolve(replica)" in section and section.count("break-glass") >= 3
    assert "rollback needs neither the network nor the registry" not in section
    assert "{ref}`multi_tenant_serving-cold-start`" in section
    # OMS v1.0: one subject with a root digest, the files in predicate.resources; the signed set
    assert "one subject" in section and "`resources`" in section and "modeltransparencysigning{" in section
    assert "trust_remote_code" in section and "each pulling its {glue:text}`wd_shard_gb` GB" in section
    assert "Kraken's mutual TLS between components is" not in section
