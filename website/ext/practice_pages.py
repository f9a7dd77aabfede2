"""Sphinx extension: the live KV-cache calculator and the drills, in the page, with no kernel.

Directives (MyST: a fenced block with the name and no body)::

    ```{kv-calculator}
    ```
    ```{drills}
    ```
    ```{flashcards}
    ```
    ```{deployment-planner}
    ```

Each becomes an empty container that ``book/_static/mha-practice.js`` fills in the browser. A page
holding one gets that script, its style sheet and ``_static/mha-data.js``, the data the formulas
need, written at build time from ``mha_kit`` (``PRESETS``, ``DTYPE_BITS``, the byte units) and
from the hints the exercises give (``DRILL_HINTS``): no number is typed into the JavaScript.
The flashcards come from the chapters' follow-up chains (``followup_cards.py``).
"""

import dataclasses
import json
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

import mha_kit as mk
from mha_kit import units

STATIC = Path(__file__).resolve().parents[2] / "book" / "_static"
DATA_FILE = "mha-data.js"
CARDS_FILE = "mha-flashcards.js"  # written by followup_cards.py
SCRIPT_FILE = "mha-practice.js"
SCHEDULE_FILE = "mha-schedule.js"  # spaced repetition of the drills and flashcards, loaded before the script
STYLE_FILE = "mha-practice.css"
MARKER = "data-mha-widget"

# The hints the exercises' test cells give for the same quantities (solutions/*/*.ipynb), in the
# order the exercises list them (the first that matches is shown), keyed by got / expected: "2" is
# twice too large, "1/2" half the right value, "1/L" and "1/B" one layer or one sequence, "1/g"
# one query head per group (g = h / h_kv). A "wrong" hint names the exact value of a classic
# mistake, which the page computes ("as_mha": the same count with h_kv = h).
DRILL_HINTS = {
    "params": {"ratios": [["1/2", "did you count only W_Q and W_K (or forget two of the four matrices)?"]],
               "wrong": [["as_mha", "counted with the query heads (h): K and V have only the key-value heads (h_kv)"]]},
    "sequence_macs": {"ratios": [["1/2", "half of it: count the scores and the value mix"],
                                 ["2", "count multiply-adds, not FLOPs (one multiply-add = 2 FLOPs)"]]},
    "decode_macs": {"ratios": [["1/2", "scores and value mix cost the same: count both"],
                               ["2", "multiply-adds, not FLOPs"]],
                    "wrong": [["as_kv_heads", "every query head computes its own scores: use h, not h_kv"]]},
    "cache_per_token": {"ratios": [["8", "bits, not bytes: divide by 8"], ["1/2", "off by a factor of 2 from K and V: check that each is counted, once"],
                                   ["1/L", "that is one layer: multiply by num_layers"]],
                        "wrong": [["as_mha", "GQA counted as MHA: only the h_kv key-value heads are cached"]]},
    "cache_batch": {"ratios": [["8", "bits, not bytes: divide by 8"], ["1/L", "multiply by num_layers"],
                               ["1/B", "multiply by batch_size"]]},
    "bytes_read": {"ratios": [["8", "bits, not bytes: divide by 8"], ["1/2", "off by a factor of 2 from K and V: check that each is counted, once"],
                              ["2", "off by a factor of 2 from K and V: check that each is counted, once"]]},
    "mla_cache": {"ratios": [["8", "bits, not bytes: divide by 8"]],
                  "wrong": [["no_rope", "the shared rotary key (qk_rope_head_dim) is cached too"],
                            ["full_heads", "that counts full per-head keys and values: MLA caches only the latent"]]},
    "max_context": {"ratios": [["8", "bits, not bytes"], ["1/8", "bytes, not bits"]]},
    "intensity": {"ratios": [["1/2", "that is multiply-adds per byte: one multiply-add is 2 FLOPs"],
                             ["1/g", "the g = h / h_kv query heads sharing a KV head all use it"]]},
}


def preset_record(cfg):
    """One preset as plain JSON: its fields, its variant and, for MLA, ``"mla": true``."""
    record = {key: value for key, value in dataclasses.asdict(cfg).items() if key != "source"}
    record.update(variant=cfg.variant, source=cfg.source, mla=cfg.variant == "mla")
    return record


def deployment_model(facts):
    """One model as the deployment planner computes with it (mha_kit.deployment.plan_deployment)."""
    cfg = facts.config
    record = {"name": facts.name, "title": facts.title, "d_model": cfg.d_model, "num_layers": cfg.num_layers,
              "num_heads": cfg.num_heads, "mla": cfg.variant == "mla", "vocab_size": facts.vocab_size or 0,
              "total_params": mk.model_params(facts), "moe": None}
    if cfg.variant == "mla":
        record.update(kv_lora_rank=cfg.kv_lora_rank, qk_rope_head_dim=cfg.qk_rope_head_dim,
                      qk_nope_head_dim=cfg.qk_nope_head_dim, v_head_dim=cfg.v_head_dim)
    else:
        record.update(num_kv_heads=cfg.num_kv_heads, head_dim=cfg.head_dim)
    if facts.is_moe:
        record["moe"] = {"num_experts": facts.num_experts, "top_k": facts.experts_per_token,
                         "moe_layers": facts.moe_layers, "expert_params": mk.expert_params(facts),
                         "routed_params": mk.routed_expert_params(facts)}
    return record


def deployment_models():
    """The records plan_deployment can plan: those whose parameters mha_kit can count."""
    return [facts for facts in mk.MODEL_FACTS.values()
            if facts.total_params is not None or facts.param_layout is not None]


def site_data():
    """Everything the page's formulas read, from mha_kit (and the drills' hints)."""
    return {
        "presets": [preset_record(cfg) for cfg in mk.PRESETS.values()],
        "dtype_bits": dict(mk.DTYPE_BITS),
        "binary_units": dict(units._BINARY),
        "decimal_units": dict(units._DECIMAL),
        "drill_hints": DRILL_HINTS,
        "float_rtol": 1e-9,
        "deployment": {
            "eight_bit_speedup": mk.EIGHT_BIT_SPEEDUP,
            "models": [deployment_model(facts) for facts in deployment_models()],
            "gpus": [{"name": g.name, "title": g.title, "hbm_bytes": g.hbm_bytes, "hbm_bandwidth": g.hbm_bandwidth,
                      "bf16_flops": g.bf16_flops} for g in mk.GPUS.values()],
            "links": [{"name": link.name, "title": link.title, "bytes_per_s": link.bytes_per_s}
                      for link in mk.LINKS.values()],
        },
    }


def write_data(app, exception):
    """Write ``_static/mha-data.js`` (a script, so that the site also works from file://)."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    text = json.dumps(site_data(), indent=1)
    (static / "mha-data.json").write_text(text + "\n", encoding="utf-8")
    (static / DATA_FILE).write_text(f"window.MHA_DATA = {text};\n", encoding="utf-8")


class _Widget(Directive):
    """An empty container that the page's script fills in."""

    has_content = False
    widget = ""
    fallback = ""

    def run(self):
        html = (
            f'<div class="mha-widget" {MARKER}="{self.widget}" id="mha-{self.widget}">'
            f'<p class="mha-noscript">{self.fallback}</p></div>'
        )
        return [nodes.raw("", html, format="html")]


class KVCalculator(_Widget):
    widget = "kv-calculator"
    fallback = "The live calculator needs JavaScript; the tables below are computed for the defaults."


class Drills(_Widget):
    widget = "drills"
    fallback = "The drills need JavaScript."


class Flashcards(_Widget):
    widget = "flashcards"
    fallback = "The flashcards need JavaScript."


class DeploymentPlanner(_Widget):
    widget = "deployment-planner"
    fallback = "The deployment planner needs JavaScript; the chapter Plan a deployment computes the same plans."


def add_assets(app, pagename, templatename, context, doctree):
    """Load the data, the script and the style sheet on the pages that hold a widget."""
    body = context.get("body") or ""
    if MARKER not in body:
        return
    app.add_css_file(STYLE_FILE)
    app.add_js_file(DATA_FILE)
    if f'{MARKER}="{Flashcards.widget}"' in body:
        app.add_js_file(CARDS_FILE)
    app.add_js_file(SCHEDULE_FILE)
    app.add_js_file(SCRIPT_FILE)


def add_static_path(app, config):
    config.html_static_path = [*config.html_static_path, str(STATIC)]


def setup(app):
    app.add_directive("kv-calculator", KVCalculator)
    app.add_directive("drills", Drills)
    app.add_directive("flashcards", Flashcards)
    app.add_directive("deployment-planner", DeploymentPlanner)
    app.connect("config-inited", add_static_path)
    app.connect("html-page-context", add_assets)
    app.connect("build-finished", write_data)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
