"""The report's tables: ``base.py`` (``Table``, ``Results`` and what every table uses), then one module per table;
``xeval.report.build`` picks them by name."""
