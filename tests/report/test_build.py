"""The ``--table`` registry: every name resolves to a table function (the registry is strings, so no import checks
it), and ``--table all`` covers every table."""

from xeval.report.build import ALL, TABLES, table_function


def test_every_registered_table_resolves_to_a_function():
    for name in TABLES:
        assert callable(table_function(name)), name


def test_all_builds_every_registered_table():
    assert sorted(ALL) == sorted(TABLES)
