"""Task cards and suites: declarative YAML in the top-level ``tasks/`` folder (plus the folders of ``$XEVAL_TASKS``), like MTEB's task metadata.

A **card** (``tasks/<name>.yaml``) says what a task is; it never holds code::

    name: udpos                     # must equal the file name
    type: tagging                   # a task type of xeval.cards.types
    format: tagging                 # reader: see xeval.data.sources.FORMATS
    description: ...
    languages: [af, ar, ...]        # the official evaluation languages
    names: {af: Afrikaans, ...}     # optional per-language names used in templates as {name}
    labels: [ADJ, ADP, ...]         # optional label set (tagging / classification)
    metric: f1                      # the primary metric (what the XTREME score averages)
    metrics: [f1, token_accuracy]   # everything the adapter reports
    train: {lang: en, split: train} # fine-tuning cards: the English training set; null for probes
    eval_split: test                # the split every language is scored on ...
    eval_splits: {th: dev}          # ... unless overridden per language
    files:                          # layout -> split -> source (templates with {lang} {name} {split})
      xtreme: {train: udpos/train-{lang}.tsv, test: udpos/test-{lang}.tsv}
      shared: {train: udpos_xtreme/train-{lang}.tsv, ...}
    hub: {path: google/xtreme, config: "udpos.{name}", revision: <commit>, splits: {dev: validation}, ...}
    recipe: {epochs: 10, learning_rate: 2.0e-5, batch_size: 32, max_length: 128, ...}
    subsample: {train: 2000, eval: 200}   # optional: deterministic per-language subsampling (see sources.py)
    notes: [...]                    # substitutions and caveats, shown by ``xeval tasks`` and recorded
    substitutes: {shared: {train: "MultiNLI's 9,999-pair subset for MultiNLI train"}}   # per layout: files that
                                    # stand in for XTREME's; tables mark the cells trained or scored on them
    split_sources: {dev: FLORES-200}  # a split whose data is another dataset: named beside the split everywhere
    citation: "..."
    licence: "..."

A source is a path template, a list of them (concatenated), or a mapping of named parts (``src``/``tgt``/``gold``
for Tatoeba and BUCC, ``text``/``gold`` for word alignment, ``path`` otherwise) plus options (``format`` to use
another reader for this split, ``gold_base``, ``exclude_contexts_from``). Globs are allowed in ``path``.

A **suite** (``tasks/suites/<name>.yaml``) picks cards and may narrow or adapt them::

    name: xtreme-mini
    layouts: [shared]               # data layouts the suite is meant for
    tasks:
      - card: udpos
        eval_splits: {test: [ar, bg, ...], dev: [af, de, ...]}   # languages per split (or ``languages:``)
        subsample: {train: 2000, eval: 200}
        recipe: {epochs: 2}         # merged over the card's recipe
        notes: ["POS test from test_labeled/ where present, else dev"]

``load_suite`` returns the *effective* cards (card + suite overrides), so an adapter only ever sees one card, and
the card hash recorded in every result covers exactly what decided the number.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xeval.base.errors import ConfigError
from xeval.base.hashing import hash_json
from xeval.cards.types import task_type

LAYOUTS = ("shared", "xtreme")


CARD_KEYS = {
    "name", "type", "format", "description", "languages", "names", "labels", "metric", "metrics", "train",
    "eval_split", "eval_splits", "files", "hub", "recipe", "subsample", "notes", "citation", "licence",
    "substitutes", "split_sources",
}


# change no number: left out of the card's hash
_PROSE_KEYS = {"description", "notes", "citation", "licence", "substitutes", "split_sources"}


_REQUIRED = ("name", "type", "format", "languages", "metric", "files")


SUITE_KEYS = {"name", "description", "layouts", "tasks", "notes"}


ENTRY_KEYS = {"card", "languages", "eval_splits", "train", "subsample", "recipe", "notes"}


@dataclass
class Card:
    name: str
    type: str
    format: str
    languages: list[str]
    metric: str
    files: dict[str, dict[str, Any]]
    metrics: list[str] = field(default_factory=list)
    description: str = ""
    names: dict[str, str] = field(default_factory=dict)
    labels: list[str] | None = None
    train: dict | None = None
    eval_split: str = "test"
    eval_splits: dict[str, str] = field(default_factory=dict)
    hub: dict | None = None
    recipe: dict = field(default_factory=dict)
    subsample: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    citation: str = ""
    licence: str = ""
    substitutes: dict[str, dict[str, str]] = field(default_factory=dict)  # layout -> split -> what stands in
    split_sources: dict[str, str] = field(default_factory=dict)  # split -> the dataset its files come from
    suite: str | None = None  # set on the effective cards a suite returns
    path: str = ""  # the YAML file it came from (not part of the hash)

    def content(self, prose: bool = True) -> dict:
        """The canonical content (the source path left out); ``prose=False``: only what can change a number."""
        keys = CARD_KEYS if prose else CARD_KEYS - _PROSE_KEYS
        out = {k: copy.deepcopy(getattr(self, k)) for k in sorted(keys)}
        out["suite"] = self.suite
        return out

    @property
    def hash(self) -> str:
        # part of every unit's identity: a corrected note or description must not turn stored results into another
        # setting's (a rerun would recompute everything and call the old records stale)
        return hash_json(self.content(prose=False))

    def identity(self) -> dict:
        """What a result record stores under ``card``."""
        return {"name": self.name, "hash": self.hash, "suite": self.suite}

    def split_for(self, lang: str) -> str:
        """The split ``lang`` is scored on."""
        return self.eval_splits.get(lang, self.eval_split)

    def eval_units(self) -> list[tuple[str, str]]:
        """(language, split) pairs to evaluate, in card order."""
        return [(lang, self.split_for(lang)) for lang in self.languages]

    def sample_size(self, split: str) -> int | None:
        """How many examples to keep for ``split`` (None = all): ``subsample.train`` for the training split,
        ``subsample.<split>`` when given, else ``subsample.eval``."""
        if not self.subsample:
            return None
        if self.train and split == self.train.get("split"):
            return self.subsample.get("train")
        return self.subsample.get(split, self.subsample.get("eval"))

    def split_label(self, split: str) -> str:
        """``dev (FLORES-200)`` where the split's data is another dataset (``split_sources``), else the split."""
        source = self.split_sources.get(split)
        return f"{split} ({source})" if source else split

    def source(self, layout: str, split: str) -> Any:
        try:
            return self.files[layout][split]
        except KeyError:
            have = ", ".join(f"{lay}:{s}" for lay, splits in self.files.items() for s in splits) or "none"
            raise ConfigError(
                f"{self.path or self.name}: task {self.name!r} has no {split!r} split in the {layout!r} layout "
                f"(it has {have})"
            ) from None


@dataclass
class Suite:
    name: str
    cards: list[Card]
    layouts: list[str] = field(default_factory=list)
    description: str = ""
    notes: list[str] = field(default_factory=list)
    path: str = ""

    @property
    def langs(self) -> dict[str, list[str]]:
        return {card.name: list(card.languages) for card in self.cards}

    def card(self, name: str) -> Card:
        for card in self.cards:
            if card.name == name:
                return card
        raise ConfigError(f"suite {self.name!r} has no task {name!r}; it has {', '.join(self.langs)}")

    @property
    def hash(self) -> str:
        return hash_json([c.content(prose=False) for c in self.cards])


def card_from_dict(obj: dict, path: str | Path = "<card>") -> Card:
    """Validate a card mapping; every problem is a ConfigError naming the file and what was expected."""
    path = str(path)
    unknown = sorted(set(obj) - CARD_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown card field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(CARD_KEYS))}")
    missing = [k for k in _REQUIRED if k not in obj]
    if missing:
        raise ConfigError(f"{path}: card is missing required field(s) {', '.join(missing)}")
    task_type(obj["type"], path)  # a type with no record in xeval.cards.types is an error naming the file
    from xeval.data.sources import FORMATS  # the readers sources.py can call

    if obj["format"] not in FORMATS:
        raise ConfigError(f"{path}: unknown format {obj['format']!r}; expected one of {', '.join(FORMATS)}")
    langs = obj["languages"]
    if not isinstance(langs, list) or not langs or not all(isinstance(x, str) for x in langs):
        raise ConfigError(f"{path}: 'languages' must be a non-empty list of language codes")
    if len(set(langs)) != len(langs):
        raise ConfigError(f"{path}: 'languages' lists a language twice")
    files = obj["files"]
    if not isinstance(files, dict) or not all(lay in LAYOUTS for lay in files):
        raise ConfigError(f"{path}: 'files' must map layouts ({', '.join(LAYOUTS)}) to splits")
    for lay, splits in files.items():
        if not isinstance(splits, dict) or not splits:
            raise ConfigError(f"{path}: files.{lay} must map split names to sources")
        for split, spec in splits.items():
            if not isinstance(spec, str | list | dict):
                raise ConfigError(f"{path}: files.{lay}.{split} must be a path, a list of paths or a mapping")
            if isinstance(spec, dict) and spec.get("format", obj["format"]) not in FORMATS:
                raise ConfigError(f"{path}: files.{lay}.{split}: unknown format {spec['format']!r}")
    for key in ("names", "eval_splits", "recipe", "subsample"):
        if not isinstance(obj.get(key, {}) or {}, dict):
            raise ConfigError(f"{path}: {key!r} must be a mapping")
    train = obj.get("train")
    if train is not None and not (isinstance(train, dict) and {"lang", "split"} <= set(train)):
        raise ConfigError(f"{path}: 'train' must be null or a mapping with 'lang' and 'split'")
    hub = obj.get("hub")
    if hub is not None and not (isinstance(hub, dict) and {"path", "config", "revision"} <= set(hub)):
        raise ConfigError(f"{path}: 'hub' must be null or a mapping with 'path', 'config' and 'revision'")
    extra = sorted(set(obj.get("eval_splits") or {}) - set(langs))
    if extra:
        raise ConfigError(f"{path}: eval_splits names languages not in 'languages': {', '.join(extra)}")
    _check_prose_maps(obj, path)
    notes = obj.get("notes") or []
    return Card(
        name=obj["name"], type=obj["type"], format=obj["format"], languages=list(langs), metric=obj["metric"],
        files=files, metrics=list(obj.get("metrics") or [obj["metric"]]), description=obj.get("description", ""),
        names=dict(obj.get("names") or {}), labels=obj.get("labels"), train=train,
        eval_split=obj.get("eval_split", "test"), eval_splits=dict(obj.get("eval_splits") or {}), hub=hub,
        recipe=dict(obj.get("recipe") or {}), subsample=dict(obj.get("subsample") or {}),
        notes=[notes] if isinstance(notes, str) else list(notes), citation=obj.get("citation", "").strip(),
        licence=obj.get("licence", ""), substitutes={k: dict(v) for k, v in (obj.get("substitutes") or {}).items()},
        split_sources=dict(obj.get("split_sources") or {}), path=path,
    )


def _check_prose_maps(obj: dict, path: str) -> None:
    """``substitutes``: layout -> split -> text; ``split_sources``: split -> text."""
    subs = obj.get("substitutes") or {}
    if not isinstance(subs, dict) or not all(
            lay in LAYOUTS and isinstance(by_split, dict) and all(isinstance(t, str) for t in by_split.values())
            for lay, by_split in subs.items()):
        raise ConfigError(f"{path}: 'substitutes' must map layouts ({', '.join(LAYOUTS)}) to {{split: text}}")
    sources = obj.get("split_sources") or {}
    if not isinstance(sources, dict) or not all(isinstance(t, str) for t in sources.values()):
        raise ConfigError(f"{path}: 'split_sources' must map split names to the dataset's name")


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")  # card and suite names: file names in a task folder, no paths


def check_name(name, what: str, where: str = "") -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"{where}{what} name {name!r}: expected letters, digits, '_', '.', '+' or '-' (a file name in a "
                          f"task folder, not a path)")


def entry_name(entry, path: Path) -> str:
    if isinstance(entry, str):
        check_name(entry, "task", f"{path}: ")
        return entry
    if not isinstance(entry, dict) or "card" not in entry:
        raise ConfigError(f"{path}: expected each task entry to be a card name or a mapping with 'card', found {entry!r}")
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{path}: task {entry['card']!r}: unknown field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(ENTRY_KEYS))}")
    check_name(entry["card"], "task", f"{path}: ")
    return entry["card"]


def effective_card(card: Card, entry, suite: str, path: Path) -> Card:
    """The card as the suite runs it: languages and splits narrowed, recipe and subsampling merged."""
    card = copy.deepcopy(card)
    card.suite = suite
    if isinstance(entry, str):
        return card
    where = f"{path}: task {card.name!r}"
    if "eval_splits" in entry:
        by_split = entry["eval_splits"]
        if not isinstance(by_split, dict):
            raise ConfigError(f"{where}: 'eval_splits' must map split names to language lists")
        langs, splits = [], {}
        for split, split_langs in by_split.items():
            for lang in split_langs:
                if lang in splits:
                    raise ConfigError(f"{where}: language {lang!r} listed under two splits")
                langs.append(lang)
                splits[lang] = split
        card.languages = langs
        card.eval_splits = {lang: s for lang, s in splits.items() if s != card.eval_split}
    if "languages" in entry:
        if "eval_splits" in entry:
            raise ConfigError(f"{where}: give either 'languages' or 'eval_splits', not both")
        card.languages = list(entry["languages"])
        card.eval_splits = {k: v for k, v in card.eval_splits.items() if k in card.languages}
    if "train" in entry:
        card.train = entry["train"]
    for key in ("recipe", "subsample"):
        if key in entry:
            if not isinstance(entry[key], dict):
                raise ConfigError(f"{where}: {key!r} must be a mapping")
            getattr(card, key).update(entry[key])
    notes = entry.get("notes") or []
    card.notes = card.notes + ([notes] if isinstance(notes, str) else list(notes))
    if not card.languages:
        raise ConfigError(f"{where}: no languages left to evaluate")
    return card
