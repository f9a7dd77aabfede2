"""The page weight of the browser edition: ``PYTHONPATH=tests python -m benchmarks.lite_page_weight SITE``.

Run by hand (it starts the browser edition's kernel once, tens of CPU seconds), on a built learner
edition (``make learner-book``: SITE is ``_build/learner/html``). Prints a table:

* the bytes of ``SITE/lite/`` on disk (what a host serves);
* the bytes a first visit downloads: the landing page, then one exercise opened in JupyterLab
  until its kernel has imported ``mha_kit`` (counted by the server here; headless Chromium, an
  empty cache, no other host reachable). It drives the page with the site tests' helpers
(``tests/lite_support.py``, imported as pytest imports it: hence ``PYTHONPATH=tests``).
"""

import argparse
import functools
import http.server
import json
import sys
import threading
from pathlib import Path


class _Counting(http.server.SimpleHTTPRequestHandler):
    served = {}

    def log_message(self, format, *args):
        pass

    def copyfile(self, source, outputfile):
        data = source.read()
        _Counting.served[self.path] = len(data)
        outputfile.write(data)


def first_visit(site, exercise):
    """``{path: bytes}`` served while a first visit opens ``exercise`` and its kernel imports mha_kit."""
    import lite_support
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Counting, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
        page.route("**/lite/jupyter-lite.json", lite_support.expose_app)
        page.goto(f"{base}/lite/index.html")
        page.goto(f"{base}/lite/lab/index.html?path={exercise}")
        page.wait_for_function(f"() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
                               f"window.jupyterapp.shell.currentWidget.context.path === {json.dumps(exercise)}",
                               timeout=lite_support.KERNEL_TIMEOUT_MS)
        page.evaluate(lite_support.START_KERNEL)
        page.wait_for_function("() => window.mhaKernelName", timeout=lite_support.KERNEL_TIMEOUT_MS)
        browser.close()
    server.shutdown()
    return dict(_Counting.served)


def mib(n):
    return f"{n / 2**20:7.1f} MiB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", help="the built learner edition (its lite/ folder is measured)")
    args = parser.parse_args(argv)
    site = Path(args.site)
    lite = site / "lite"
    on_disk = sum(p.stat().st_size for p in lite.rglob("*") if p.is_file())
    summary = json.loads((lite / "mha-lite.json").read_text(encoding="utf-8"))
    served = first_visit(site, summary["exercises"][0])
    kernel = sum(n for path, n in served.items() if "/xeus-python-kernel/" in path)
    print(f"{'lite/ on disk':<44}{mib(on_disk)}  {on_disk:>12,} bytes")
    print(f"{'first visit: landing + an exercise, kernel':<44}{mib(sum(served.values()))}  "
          f"{sum(served.values()):>12,} bytes in {len(served)} files")
    print(f"{'  of which the kernel (wasm, packages)':<44}{mib(kernel)}  {kernel:>12,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
