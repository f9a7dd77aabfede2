"""Feedback without hidden tests: a preprocessor that keeps only the last line of each error.

nbgrader's ``ClearHiddenTests`` removes the hidden-test region from a test cell's source, but an
IPython traceback quotes the failing line of that source again. The exercises' assertion helpers
(:mod:`mha_course.expect`) put everything the learner needs into the error's one-line message,
so the feedback keeps ``AssertionError: <message>`` and drops the traceback.

Configured in ``nbgrader_config.py`` as one of ``GenerateFeedback.preprocessors``.
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool


class OneLineErrors(Preprocessor):
    """Replace every error output's traceback with ``"<ename>: <evalue>"``."""

    # nbconvert preprocessors are off unless enabled; nbgrader's own are on by default, so is this
    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
