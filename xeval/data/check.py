"""``xeval data check``: read every file a suite needs, through the same readers and subsampling a run uses, and
report what each (task, language, split) yields. Problems are collected, not raised one by one, so a user sees
every missing or malformed file at once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from xeval.base.errors import UserError
from xeval.data.sources import DataRoot, count_examples, resolve


@dataclass
class Row:
    task: str
    lang: str
    split: str
    role: str  # "train" | "eval"
    examples: int | None = None  # after subsampling
    total: int | None = None  # in the source
    source: str = ""
    error: str | None = None


@dataclass
class CheckReport:
    root: DataRoot
    suite: str
    rows: list[Row] = field(default_factory=list)

    @property
    def errors(self) -> list[Row]:
        return [r for r in self.rows if r.error]


def needed_units(card) -> list[tuple[str, str, str]]:
    """(lang, split, role) for every source a run of ``card`` reads: the training set, then each evaluated language."""
    units = []
    if card.train:
        units.append((card.train["lang"], card.train["split"], "train"))
    units.extend((lang, split, "eval") for lang, split in card.eval_units())
    return units


def _describe_source(card, lang: str, split: str, root: DataRoot) -> str:
    if root.layout == "hub":
        from xeval.data import hub

        ident = hub.identity(card, lang, split)
        return f"{ident['path']}:{ident['config']}:{ident['split']}@{ident['revision'][:7]}"
    files = [os.path.relpath(p, root.path) for p in resolve(card, lang, split, root).files]
    return files[0] + (f" (+{len(files) - 1} more)" if len(files) > 1 else "")


def check_suite(suite, root: DataRoot, tasks: list[str] | None = None, seed: int = 0) -> CheckReport:
    report = CheckReport(root=root, suite=suite.name)
    cards = [c for c in suite.cards if not tasks or c.name in tasks]
    if tasks:
        unknown = sorted(set(tasks) - {c.name for c in suite.cards})
        if unknown:
            raise UserError(f"suite {suite.name!r} has no task(s) {', '.join(unknown)}; it has {', '.join(suite.langs)}")
    for card in cards:
        for lang, split, role in needed_units(card):
            row = Row(card.name, lang, split, role)
            try:
                row.source = _describe_source(card, lang, split, root)
                row.examples, row.total = count_examples(card, lang, split, root, seed)
            except UserError as err:
                row.error = str(err)
            report.rows.append(row)
    return report


def format_table(report: CheckReport) -> str:
    header = ("task", "lang", "split", "role", "examples", "in source", "source")
    lines = [header]
    for r in report.rows:
        used = "ERROR" if r.error else str(r.examples)
        total = "-" if r.error else str(r.total)
        lines.append((r.task, r.lang, r.split, r.role, used, total, r.source or "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    right = {4, 5}
    out = []
    for line in lines:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells + [line[-1]]).rstrip())
    return "\n".join(out)
