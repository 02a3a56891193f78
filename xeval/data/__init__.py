"""Readers for every source format xeval meets, returning the typed examples of ``xeval.data.examples``.

Every reader validates as it reads and raises ``xeval.base.errors.DataError`` (``path:line: expected …, found …``).
"""
