"""The renderers of ``Table``s: ``cells.py`` (what they all draw from), ``markdown.py``, ``latex.py``,
``csv_text.py``; ``render.py`` picks one by format name."""
