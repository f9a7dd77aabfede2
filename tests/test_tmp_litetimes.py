"""The browser edition (JupyterLite) runs every chapter of the built site top to bottom (issue 36).

Its own JupyterLite tab and kernel (lite_lab), on a pytest-xdist worker of its own beside tests/test_site.py's
page tests and tests/test_site_lite.py's exercises, all three reading the one build of tests/site_browser.py.
"""
# ruff: noqa: F811 (a test names the fixtures it uses, imported from site_browser)
import json

import lite_support as lite
from site_browser import (  # noqa: F401 (the fixtures: pytest finds them among the module's names)
    LITE_ONLY,
    browser,
    error_lines,
    lite_lab,
    lite_summary,
    server,
    site,
)


def test_lite_runs_every_chapter_top_to_bottom(lite_lab, site):
    """Issue 36: every chapter copy runs top to bottom in the page's kernel with no error output (Continuous
    batching raised NameError in five cells when its copy left out a remove-cell cell that defines names)."""
    tab, _, _ = lite_lab
    chosen = set(LITE_ONLY.split(",")) if LITE_ONLY else None
    failures = []
    import time
    import sys
    for path in lite_summary(site)["chapters"].values():
        t0 = time.time()
        if chosen is not None and path not in chosen:
            continue
        nb = json.loads((site.html / "lite" / "files" / path).read_text(encoding="utf-8"))
        tab.page.evaluate(lite.EXECUTE, ["%reset -f"])
        for index, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
            errors = error_lines(tab.page.evaluate(lite.EXECUTE, ["".join(cell["source"])]))
            if errors:
                failures.append(f"{path} code cell {index}: {errors[0][:300]}")
                break  # the first error of a chapter: later cells fail after it
        print(f'LITETIME {time.time() - t0:6.2f} {path}', file=sys.stderr)
    assert not failures, "\n".join(failures)
