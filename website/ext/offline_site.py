"""Sphinx extension: keep the built site readable with no network.

Two things would otherwise reach for a CDN:

* MathJax. The ``sphinx-mathjax-offline`` package (pinned in requirements.txt)
  copies MathJax 3 into ``_static/mathjax`` and points ``mathjax_path`` there.
* Matplotlib's jshtml animations (the step-through chapter) link Font Awesome 4
  from maxcdn. The theme already ships Font Awesome 6, whose script draws the
  same ``fa fa-step-forward`` icons, so the link is dropped from the page body.

It also drops repeated inline scripts: jupyter-book reads the sources twice,
so sphinx-thebe and sphinx-togglebutton register their inline set-up scripts
twice, and a second ``const THEBE_JS_URL`` is a script error in the browser.

After the build, every HTML page is scanned for scripts, stylesheets, images or
fonts loaded from another host; each one is a warning, so ``-W`` fails the
build. Links a reader clicks (launch buttons, the repository) are not loads
and are left alone.
"""

import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

# matplotlib/_animation_data.py: JS_INCLUDE starts with this stylesheet link.
_MATPLOTLIB_FONT_AWESOME = re.compile(
    r'<link\s+rel="stylesheet"\s+href="https?://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*"\s*/?>'
)

# A tag attribute that makes the browser fetch something as the page loads.
_EXTERNAL_LOAD = re.compile(
    r"<(?P<tag>script|img|iframe|source|video|audio)\b[^>]*\bsrc=[\"'](?P<url>(?:https?:)?//[^\"']+)"
    r"|<link\b(?=[^>]*\brel=[\"'](?:stylesheet|preload|icon|modulepreload)[\"'])[^>]*\bhref=[\"'](?P<href>(?:https?:)?//[^\"']+)"
    r"|@import\s+(?:url\()?[\"']?(?P<css>(?:https?:)?//[^\"')]+)"
    r"|url\([\"']?(?P<font>(?:https?:)?//[^\"')]+)",
    re.IGNORECASE,
)


def drop_matplotlib_cdn(app, pagename, templatename, context, doctree):
    """Remove the Font Awesome CDN link that matplotlib's jshtml embeds."""
    body = context.get("body")
    if body:
        context["body"] = _MATPLOTLIB_FONT_AWESOME.sub("", body)


def _script_key(script):
    """What makes two script entries the same script.

    An inline script's filename is None when an extension registered it and ''
    when it was added to one page; both mean "no file".
    """
    attributes = getattr(script, "attributes", {})
    return (
        str(getattr(script, "filename", script) or ""),
        tuple(sorted((key, str(value)) for key, value in attributes.items())),
    )


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    """Keep the first of identical script entries (see the module docstring)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique  # in place: Sphinx renders this very list


def external_loads(html):
    """Return the URLs on other hosts that ``html`` loads (not links)."""
    found = []
    for match in _EXTERNAL_LOAD.finditer(html):
        found.append(next(url for url in match.group("url", "href", "css", "font") if url))
    return found


def warn_on_external_loads(app, exception):
    """Warn (an error under -W) for every page that loads from another host."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    for page in sorted(outdir.rglob("*.html")):
        if "_static" in page.relative_to(outdir).parts:
            continue  # vendored MathJax/theme files: not pages
        for url in external_loads(page.read_text(encoding="utf-8")):
            logger.warning(
                "%s loads %s from another host; the site must work offline",
                page.relative_to(outdir),
                url,
            )


def setup(app):
    app.connect("html-page-context", drop_matplotlib_cdn)
    app.connect("html-page-context", drop_repeated_scripts)
    app.connect("build-finished", warn_on_external_loads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
