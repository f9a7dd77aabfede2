"""The book's Sphinx extensions, one module each, named in ``_config.yml`` (``sphinx: local_extensions``)."""
