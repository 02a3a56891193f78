"""Where a table cell departs from XTREME's protocol, read from the records behind it, and the marks that say so.

XTREME reports every task on its test sets, evaluated whole, after fine-tuning on the full English training set.
A run can depart from that in three ways a table must show (xtreme-mini does all three, a CI run too):

    ‡  dev for test   a language scored on its dev set (no labelled test in the data): a cell averaging such
                      languages mixes dev and test, or is dev only
    §  subsampled     evaluated on a subsample of each language (the card's ``subsample``, ``--max-eval``,
                      ``--limit``) or trained on a subsample of the English training set; retrieval among fewer
                      candidates scores higher than on the whole set (Tatoeba on 200 of 1,000 sentences)
    ¶  substitute     trained (or scored) on files that stand in for XTREME's (the card's ``substitutes`` for the
                      data layout: MultiNLI's 9,999-pair subset for MultiNLI, PAWS-X English dev for PAWS)

    !  warned         the record carries a warning (``extra.warnings``), e.g. a classifier that answered one class
                      for every example: its accuracy is that class's share, not transfer

(† is the summary's own mark: a cell averaged over another language set than XTREME's.) The summary, the gap table,
the per-language tables and the figures mark every such cell and explain each mark in a note; a mean over marked
cells carries their marks. Records without the blocks a run writes (hand-made ones) carry no marks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xeval.cards.catalog import known_card
from xeval.report.frame import NO_LAYER, setting_label

DEV, SUBSAMPLE, SUBSTITUTE, WARNED = "dev", "subsample", "substitute", "warned"
SYMBOLS = {"languages": "†", DEV: "‡", SUBSAMPLE: "§", SUBSTITUTE: "¶", WARNED: "!"}  # the order marks are written in
RETRIEVAL_FORMATS = ("tatoeba", "bucc")


def symbols(kinds) -> str:
    """The marks of ``kinds`` in their fixed order (``"‡§"``)."""
    kinds = set(kinds)
    return "".join(symbol for kind, symbol in SYMBOLS.items() if kind in kinds)


def union(marks) -> str:
    """Every mark found in the strings ``marks``, once each, in the fixed order (a mean over marked cells)."""
    found = "".join(str(m or "") for m in marks)
    return "".join(symbol for symbol in SYMBOLS.values() if symbol in found)


@dataclass
class TaskDeviations:
    """How one task's cells of one table row (model, setting) depart from XTREME's protocol."""

    task: str
    langs: set[str] = field(default_factory=set)
    on_dev: set[str] = field(default_factory=set)  # languages scored on another split than the card reports (dev)
    eval_sizes: dict[str, int] = field(default_factory=dict)  # language -> examples scored, where subsampled
    train_sizes: set[int] = field(default_factory=set)  # English training examples, where subsampled
    substitutes: set[str] = field(default_factory=set)
    warned: dict[str, str] = field(default_factory=dict)  # language -> the first warning of its record
    retrieval: bool = False

    def merge(self, other: TaskDeviations) -> TaskDeviations:
        """``other``'s departures added to these (a language on dev in either stays on dev)."""
        self.langs |= other.langs
        self.on_dev |= other.on_dev
        self.eval_sizes.update(other.eval_sizes)
        self.train_sizes |= other.train_sizes
        self.substitutes |= other.substitutes
        self.warned.update(other.warned)
        self.retrieval = self.retrieval or other.retrieval
        return self

    def kinds(self, langs=None) -> set[str]:
        """The kinds of departure of the cell over ``langs`` (default: every language of the task)."""
        langs = self.langs if langs is None else set(langs) & self.langs
        out = set()
        if langs & self.on_dev:
            out.add(DEV)
        if self.train_sizes or any(lang in self.eval_sizes for lang in langs):
            out.add(SUBSAMPLE)
        if self.substitutes:
            out.add(SUBSTITUTE)
        if langs & set(self.warned):
            out.add(WARNED)
        return out


def _size(block: dict | None) -> int | None:
    sub = (block or {}).get("subsample") or {}
    return int(sub["n"]) if isinstance(sub.get("n"), int | float) else None


def _eval_cap(rec) -> int | None:
    """The most examples a language could be scored on: the card's subsample or ``--max-eval``/``--limit``."""
    config = rec.config or {}
    caps = [_size(rec.data), config.get("max_eval"), (config.get("recipe") or {}).get("max_eval")]
    caps = [int(c) for c in caps if isinstance(c, int | float) and not isinstance(c, bool)]
    return min(caps) if caps else None


def record_deviations(rec) -> TaskDeviations:
    """One record's departures (a ``TaskDeviations`` of its single language)."""
    u = rec.unit
    card = known_card(str((rec.card or {}).get("name") or u.task))
    out = TaskDeviations(u.task, {u.lang})
    if u.split != (card.eval_split if card else "test"):  # XTREME's tasks report test (TyDiQA's is its dev files)
        out.on_dev.add(u.lang)
    out.retrieval = (rec.data or {}).get("format") in RETRIEVAL_FORMATS
    cap = _eval_cap(rec)
    limited = (rec.config or {}).get("limit")  # --limit F: a fraction of each language (always a subsample)
    if (cap is not None and rec.n_examples >= cap) or (isinstance(limited, int | float) and limited < 1):
        out.eval_sizes[u.lang] = int(rec.n_examples)
    train = (rec.config or {}).get("train")
    if isinstance(train, dict):
        n, cap = train.get("n_examples"), _size(train.get("data"))
        max_train = ((rec.config or {}).get("recipe") or {}).get("max_train")
        caps = [c for c in (cap, max_train) if isinstance(c, int)]
        if isinstance(n, int) and caps and n >= min(caps):
            out.train_sizes.add(n)
        layout = (train.get("data") or {}).get("layout")
        text = card.substitutes.get(layout, {}).get(train.get("split")) if card and layout else None
        if text:
            out.substitutes.add(text)
    layout = (rec.data or {}).get("layout")
    text = card.substitutes.get(layout, {}).get(u.split) if card and layout else None
    if text:
        out.substitutes.add(text)
    warnings = (rec.extra or {}).get("warnings")
    if isinstance(warnings, list) and warnings:
        out.warned[u.lang] = str(warnings[0])
    return out


def task_deviations(results) -> dict[tuple[str, str, str], TaskDeviations]:
    """{(model, frame setting, task): its departures} over the records behind ``results.long`` (the reported split
    and the chosen layer of each)."""
    shown = set(map(tuple, results.long[["model", "task", "lang", "split", "setting", "layer"]]
                    .drop_duplicates().itertuples(index=False)))
    out: dict[tuple[str, str, str], TaskDeviations] = {}
    for rec in results.records:
        u = rec.unit
        setting = setting_label(u)
        layer = NO_LAYER if u.layer is None else int(u.layer)
        if (u.model, u.task, u.lang, u.split, setting, layer) not in shown:
            continue
        out.setdefault((u.model, setting, u.task), TaskDeviations(u.task)).merge(record_deviations(rec))
    return out


def _sizes(values) -> str:
    values = sorted(set(values))
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,}-{values[-1]:,}"


def deviation_notes(found: dict[str, list[TaskDeviations]], title, order=None) -> list[str]:
    """One note per mark used: ``found`` = {kind: the tasks' deviations whose cells carry it}; ``title(task)`` names a
    task as the table does; ``order``: the tasks in the table's order (the notes list them so)."""
    notes = []
    if order is not None:
        rank = {task: i for i, task in enumerate(order)}
        found = {kind: sorted(devs, key=lambda d: rank.get(d.task, len(rank))) for kind, devs in found.items()}
    if found.get(DEV):
        parts = []
        for dev in _unique(found[DEV]):
            n = len(dev.on_dev)
            parts.append(f"{title(dev.task)} {n} of {len(dev.langs)} languages" if n < len(dev.langs)
                         else f"{title(dev.task)} all {n}")
        notes.append(f"{SYMBOLS[DEV]} scored on dev sets where XTREME reports test (no labelled test in the data), so "
                     "not a test-set number; a cell over both averages dev and test: " + "; ".join(parts))
    if found.get(SUBSAMPLE):
        parts, retrieval = [], False
        for dev in _unique(found[SUBSAMPLE]):
            bits = []
            if dev.train_sizes:
                bits.append(f"trained on {_sizes(dev.train_sizes)} English examples")
            if dev.eval_sizes:
                bits.append(f"scored on {_sizes(dev.eval_sizes.values())} examples a language")
                retrieval = retrieval or dev.retrieval
            parts.append(f"{title(dev.task)} {', '.join(bits)}")
        notes.append(f"{SYMBOLS[SUBSAMPLE]} subsampled, where XTREME trains and scores on the whole sets: "
                     + "; ".join(parts) + ("; retrieval among fewer candidates scores higher than among all of them"
                                           if retrieval else ""))
    if found.get(SUBSTITUTE):
        parts = [f"{title(dev.task)}: {'; '.join(sorted(dev.substitutes))}" for dev in _unique(found[SUBSTITUTE])]
        notes.append(f"{SYMBOLS[SUBSTITUTE]} other data than XTREME's: " + "; ".join(parts))
    if found.get(WARNED):
        parts = [f"{title(dev.task)} {', '.join(sorted(dev.warned))} ({next(iter(dev.warned.values()))})"
                 for dev in _unique(found[WARNED])]
        notes.append(f"{SYMBOLS[WARNED]} the run warned about these numbers: " + "; ".join(parts))
    return notes


def _unique(devs: list[TaskDeviations]) -> list[TaskDeviations]:
    """One entry per task, the rows' departures merged (a language on dev in any row counts)."""
    seen: dict[str, TaskDeviations] = {}
    for dev in devs:
        seen.setdefault(dev.task, TaskDeviations(dev.task)).merge(dev)
    return list(seen.values())


def mark_cells(table_marks, row, columns, dev: TaskDeviations | None, found: dict, langs=None) -> None:
    """Add ``dev``'s marks (over ``langs``) to the cells ``columns`` of ``row`` of ``table_marks`` (a frame of
    strings) and note which tasks carry each in ``found``."""
    if dev is None:
        return
    kinds = dev.kinds(langs)
    for kind in kinds:
        found.setdefault(kind, []).append(dev)
    for column in columns:
        table_marks.at[row, column] = union([table_marks.at[row, column], symbols(kinds)])


def not_xtremes(title: str) -> str:
    """The title of a table whose cells depart from XTREME's protocol."""
    return f"{title} (not XTREME's numbers: marked cells depart from its protocol)"
