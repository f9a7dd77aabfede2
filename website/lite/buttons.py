"""Sphinx extension: a "Try it in the browser" button on every chapter of the browser edition.

Active when the build makes the browser edition too (``MHA_LITE=1``, set by website/build.py for
the learner edition; website/lite/site.py writes ``lite/`` once Sphinx is done). Then

* every chapter that runs in the browser (website/lite/site.py's :func:`chapter_plan`, the same
  choice the build makes) gets a header button that opens its copy in JupyterLite, in the site's
  own ``lite/`` folder (a relative link: no other host);
* the exercises page gets the button (to the browser edition's landing page) and, at the top, a
  box with a link to each released exercise, where work is kept, and how to download it.

Without ``MHA_LITE`` (``make book``: no ``lite/`` there) the site shows none of it.
"""

import html
import os
import posixpath
from pathlib import Path

from sphinx.errors import ExtensionError

from website.lite import site as lite_site

ENV_FLAG = "MHA_LITE"
EXERCISES_PAGE = "book/exercises"
BUTTON_TEXT = "Try it"
TOOLTIP = "Run this page's code in your browser (JupyterLite, no install)"


def is_active(environ=os.environ):
    return environ.get(ENV_FLAG, "") not in ("", "0")


def lite_url(pagename, target):
    """The URL of ``lite/<target>`` relative to the page ``pagename`` (``book/attention_cost``)."""
    depth = posixpath.dirname(pagename)
    prefix = "../" * (depth.count("/") + 1) if depth else ""
    return f"{prefix}lite/{target}"


def button(url, tooltip=TOOLTIP):
    return {"type": "link", "url": url, "tooltip": tooltip, "icon": "fas fa-play", "text": BUTTON_TEXT,
            "label": "lite-button"}


def exercises_box(pagename, exercises):
    """The box at the top of the exercises page: a link to each exercise in the browser edition."""
    links = ", ".join(f'<a href="{html.escape(lite_url(pagename, lite_site.page_url(path)))}">'
                      f"{html.escape(Path(path).stem)}</a>" for path in exercises)
    return (
        '<div class="admonition tip mha-lite-box"><p class="admonition-title">Try them in your browser</p>'
        f"<p>Open an exercise in JupyterLab running in this browser, with nothing to install: {links} "
        f'(or <a href="{html.escape(lite_url(pagename, "index.html"))}">all of them and the chapters</a>). '
        "A test cell judges your answer there as it does on your computer; it is a self-check, and the hidden "
        "tests run only when an instructor grades.</p>"
        "<p>This page runs numpy 1.25; grading runs numpy 2. A name numpy 2 removed (<code>np.float_</code>, "
        "<code>np.Inf</code>, <code>np.asfarray</code>) still grades, and the test cell prints one line naming "
        "its replacement.</p>"
        "<p>Your work is kept in this browser's storage (IndexedDB), on this computer only: clearing the site's "
        "data or a private window loses it. <strong>File ▸ Download</strong> saves the notebook, the file you "
        "hand in.</p></div>"
    )


def add_buttons(app, pagename, templatename, context, doctree):
    plan = getattr(app, "mha_lite_plan", None)
    if plan is None or "header_buttons" not in context:
        return
    chapters, exercises = plan
    if pagename in chapters:
        context["header_buttons"].append(button(lite_url(pagename, lite_site.page_url(chapters[pagename]))))
    elif pagename == EXERCISES_PAGE:
        context["header_buttons"].append(button(lite_url(pagename, "index.html"),
                                                "The exercises in your browser (JupyterLite, no install)"))
        body = context.get("body", "")
        end = body.find("</h1>")
        if end != -1:
            context["body"] = body[:end + 5] + exercises_box(pagename, exercises) + body[end + 5:]


def plan_lite(app):
    """Which pages get a button: the chapters the browser edition holds (None when it is not built)."""
    app.mha_lite_plan = None
    if not is_active():
        return
    if not lite_site.kernel_static().is_dir():
        raise ExtensionError(f"{ENV_FLAG}=1 needs the browser edition's environment {lite_site.LITE_VENV}: run `make lite-env`")
    chapters, left_out = lite_site.chapter_plan()
    if plan_file := os.environ.get(lite_site.PLAN_ENV):  # for the browser edition's build, after Sphinx (website/build.py)
        lite_site.write_plan(plan_file, (chapters, left_out))
    app.mha_lite_plan = (chapters, lite_site.exercise_notebooks())


def setup(app):
    app.connect("builder-inited", plan_lite)
    # after sphinx-book-theme fills header_buttons (its handlers run at priority 501)
    app.connect("html-page-context", add_buttons, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
