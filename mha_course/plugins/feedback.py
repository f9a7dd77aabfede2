"""Feedback without hidden tests, readable offline.

* :class:`OneLineErrors`, a preprocessor: nbgrader's ``ClearHiddenTests`` removes the hidden-test
  region from a test cell's source, but an IPython traceback quotes the failing line of that
  source again. The exercises' checks put everything the learner needs into the error's one-line
  message ("8x too large: bits, not bytes: divide by 8"; a timeout names the course's time limit), so
  the feedback keeps ``<ename>: <evalue>`` and drops the traceback.
* :class:`OfflineHTMLExporter`: nbgrader's feedback page loads MathJax from a CDN; the exercises
  hold no TeX, so the page is written without any script from the network.

Both are configured in ``nbgrader_config.py`` (``GenerateFeedback.preprocessors`` and
``GenerateFeedback.exporter_class``).
"""
from __future__ import annotations

import re

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

#: A ``<script>`` that loads from the network, and MathJax's configuration script that goes with it.
_REMOTE_SCRIPT = re.compile(r'<script[^>]*\ssrc="https?://[^"]*"[^>]*>\s*</script>\s*', re.IGNORECASE)
_MATHJAX_CONFIG = re.compile(r'<script type="text/x-mathjax-config">.*?</script>\s*', re.DOTALL)


class OneLineErrors(Preprocessor):
    """Replace every error output's traceback with ``"<ename>: <evalue>"``."""

    # nbconvert preprocessors are off unless enabled; nbgrader's own are on by default, so is this
    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


class OfflineHTMLExporter(HTMLExporter):
    """nbconvert's HTML exporter, minus every script loaded from the network (MathJax's CDN)."""

    def from_notebook_node(self, nb, resources=None, **kw):
        html, resources = super().from_notebook_node(nb, resources, **kw)
        return _MATHJAX_CONFIG.sub("", _REMOTE_SCRIPT.sub("", html)), resources
