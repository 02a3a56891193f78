"""One module per CLI verb (see ``xeval/cli.py`` for the protocol)."""
