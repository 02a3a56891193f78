"""A result store in memory (``xeval.evaluate(..., store=None)``): the interface of ``xeval.results.store.Store``,
nothing written but fine-tuning's prediction files, which go to a temporary folder removed at exit."""

from __future__ import annotations

from pathlib import Path


class MemoryStore:
    """A store that keeps records in memory and writes nothing (``xeval.evaluate(..., store=None)``): the same
    interface as ``xeval.results.store.Store``. Fine-tuning's prediction files go to a temporary folder removed at exit."""

    persistent = False  # nothing outlives the process: no fine-tuning state is kept to resume from

    def __init__(self):
        import atexit
        import shutil
        import tempfile

        from xeval.results.store import Store

        self.records: dict = {}
        self.kept_outcomes: dict = {}
        self.written = 0
        self.overwrite = False
        self._paths = Store(tempfile.mkdtemp(prefix="xeval-memory-"))  # only path() is used: prediction files
        atexit.register(shutil.rmtree, self._paths.root, ignore_errors=True)
        self.root = self._paths.root

    def path(self, unit) -> Path:
        return self._paths.path(unit)

    def has(self, unit) -> bool:
        return unit in self.records

    def get(self, unit):
        return self.records.get(unit)

    def put(self, record, outcomes=None) -> None:
        self.records[record.unit] = record
        self.kept_outcomes[record.unit] = outcomes
        self.written += 1

    def outcomes_of(self, unit):
        return self.kept_outcomes.get(unit)
