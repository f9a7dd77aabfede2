"""The browser edition ("Try it in the browser", JupyterLite): ``lite/`` of the learner edition.

* :mod:`website.lite.site` - builds ``SITE/lite`` (``python -m website.lite.site SITE``);
* :mod:`website.lite.kernel` - what the browser's kernel can import, what of the course it gets (by folder), the packing;
* :mod:`website.lite.notebooks` - the chapters as the browser edition runs them;
* :mod:`website.lite.trial` - a trial run of a chapter's copy with only the browser's packages;
* :mod:`website.lite.buttons` - the Sphinx extension that gives the pages their "Try it" buttons;
* :mod:`website.lite.mha_lite` - runs in the browser: the kernel's own hook, packed as ``mha_lite``.
"""
