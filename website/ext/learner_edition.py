"""Sphinx extension: the learner edition, a site for a graded class that gives nothing away.

Built with ``MHA_HIDE_SOLUTIONS=1`` (``make learner-book``), the site

* leaves the pages in ``LEARNER_EXCLUDED`` (the instructor's guide, which shows hidden tests and
  graded answers) out of the table of contents and the build; a link to one of them from another
  page becomes plain text;
* serves, as each notebook's download (``_sources/<page>.ipynb``), the notebook as this build
  executed it, not the file in the repository: the solutions page's stored outputs hold every
  answer, while this build ran it with the answers left out.

The worked solutions page itself reads the same variable and shows no answer.
"""

import os
import shutil
from pathlib import Path

import yaml
from docutils import nodes

ENV_FLAG = "MHA_HIDE_SOLUTIONS"
LEARNER_EXCLUDED = {"book/instructor_guide": "the instructor's guide (not part of this edition)"}


def is_learner_edition(environ=os.environ):
    return environ.get(ENV_FLAG, "") not in ("", "0")


def learner_toc(toc):
    """A jupyter-book ``_toc.yml`` (as a dict) without the excluded pages and emptied parts."""
    def keep(entries):
        kept = []
        for entry in entries:
            if entry.get("file") in LEARNER_EXCLUDED:
                continue
            entry = dict(entry)
            if "sections" in entry:
                entry["sections"] = keep(entry["sections"])
            kept.append(entry)
        return kept

    toc = dict(toc)
    if "parts" in toc:
        parts = [dict(part, chapters=keep(part.get("chapters", []))) for part in toc["parts"]]
        toc["parts"] = [part for part in parts if part["chapters"]]
    if "chapters" in toc:
        toc["chapters"] = keep(toc["chapters"])
    return toc


def use_learner_toc(app, config):
    """Point sphinx-external-toc at a copy of _toc.yml without the excluded pages."""
    if not is_learner_edition():
        return
    source = Path(app.srcdir) / config.external_toc_path
    toc = learner_toc(yaml.safe_load(source.read_text(encoding="utf-8")))
    target = Path(app.outdir).parent / "learner_toc.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    config.external_toc_path = str(target)


def unlink_excluded(app, env, node, contnode):
    """A reference to an excluded page becomes text instead of a broken link."""
    if not is_learner_edition() or node.get("reftype") != "doc":
        return None
    target = node.get("reftarget", "")
    base = Path(node.get("refdoc", "")).parent
    docname = (base / target).as_posix() if not target.startswith("/") else target.lstrip("/")
    if docname in LEARNER_EXCLUDED:
        return nodes.inline("", LEARNER_EXCLUDED[docname])
    return None


def serve_executed_notebooks(app, exception):
    """Replace each ``_sources/*.ipynb`` with the notebook as this build executed it."""
    if exception is not None or app.builder.format != "html" or not is_learner_edition():
        return
    sources = Path(app.outdir) / "_sources"
    executed = Path(app.outdir).parent / "jupyter_execute"
    for notebook in sources.rglob("*.ipynb"):
        ran = executed / notebook.relative_to(sources)
        if not ran.exists():
            raise RuntimeError(f"learner edition: no executed copy of {notebook.relative_to(sources)} in {executed}")
        shutil.copyfile(ran, notebook)


def setup(app):
    app.connect("config-inited", use_learner_toc, priority=100)  # before sphinx-external-toc (900)
    app.connect("missing-reference", unlink_excluded)
    app.connect("build-finished", serve_executed_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
