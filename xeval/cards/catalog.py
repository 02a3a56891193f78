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
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from xeval.base.errors import ConfigError
from xeval.base.hashing import hash_json
from xeval.base.shipped import tasks_root
from xeval.base.textfile import read_utf8
from xeval.cards.types import task_type

LAYOUTS = ("shared", "xtreme")
_CARD_KEYS = {
    "name", "type", "format", "description", "languages", "names", "labels", "metric", "metrics", "train",
    "eval_split", "eval_splits", "files", "hub", "recipe", "subsample", "notes", "citation", "licence",
}
_PROSE_KEYS = {"description", "notes", "citation", "licence"}  # change no number: left out of the card's hash
_REQUIRED = ("name", "type", "format", "languages", "metric", "files")
_SUITE_KEYS = {"name", "description", "layouts", "tasks", "notes"}
_ENTRY_KEYS = {"card", "languages", "eval_splits", "train", "subsample", "recipe", "notes"}


def tasks_dir() -> Path:
    """The built-in cards: the checkout's top-level ``tasks/`` (shipped in the wheel, see ``xeval.base.shipped``)."""
    return tasks_root()


def task_dirs(extra: list[Path] | None = None) -> list[Path]:
    """Folders searched for cards (``<dir>/<name>.yaml``) and suites (``<dir>/suites/<name>.yaml``), first match
    wins: ``extra`` (a suite file's own folders), each folder of ``$XEVAL_TASKS`` (several joined by
    ``os.pathsep``), then the built-in cards. So ``XEVAL_TASKS`` adds cards to the built-in ones, and a card of the
    same name replaces the built-in one."""
    env = [Path(p) for p in os.environ.get("XEVAL_TASKS", "").split(os.pathsep) if p.strip()]
    return list(dict.fromkeys([*(extra or []), *env, tasks_dir()]))


def _find(filename: str, extra: list[Path] | None = None) -> Path | None:
    for folder in task_dirs(extra):
        if (folder / filename).is_file():
            return folder / filename
    return None


def _is_suite_file(name: str) -> bool:
    """``--suite`` names a YAML file (``my/suite.yaml``) rather than a suite of the task folders."""
    return name.endswith((".yaml", ".yml")) or os.sep in name or (os.altsep or os.sep) in name


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
    suite: str | None = None  # set on the effective cards a suite returns
    path: str = ""  # the YAML file it came from (not part of the hash)

    def content(self, prose: bool = True) -> dict:
        """The canonical content (the source path left out); ``prose=False``: only what can change a number."""
        keys = _CARD_KEYS if prose else _CARD_KEYS - _PROSE_KEYS
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


# ----------------------------------------------------------------------------------------------------------- loading


def _read_yaml(path: Path) -> dict:
    try:
        obj = yaml.safe_load(read_utf8(path, "YAML"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: expected valid YAML, found {getattr(err, 'problem', err)}") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{path}: expected a mapping of card fields, found {type(obj).__name__}")
    return obj


def _names(folders: list[Path]) -> list[str]:
    return sorted({p.stem for folder in folders if folder.is_dir() for p in folder.glob("*.yaml")})


def list_cards() -> list[str]:
    return _names(task_dirs())


def list_suites() -> list[str]:
    return _names([d / "suites" for d in task_dirs()])


def card_from_dict(obj: dict, path: str | Path = "<card>") -> Card:
    """Validate a card mapping; every problem is a ConfigError naming the file and what was expected."""
    path = str(path)
    unknown = sorted(set(obj) - _CARD_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown card field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_CARD_KEYS))}")
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
    notes = obj.get("notes") or []
    return Card(
        name=obj["name"], type=obj["type"], format=obj["format"], languages=list(langs), metric=obj["metric"],
        files=files, metrics=list(obj.get("metrics") or [obj["metric"]]), description=obj.get("description", ""),
        names=dict(obj.get("names") or {}), labels=obj.get("labels"), train=train,
        eval_split=obj.get("eval_split", "test"), eval_splits=dict(obj.get("eval_splits") or {}), hub=hub,
        recipe=dict(obj.get("recipe") or {}), subsample=dict(obj.get("subsample") or {}),
        notes=[notes] if isinstance(notes, str) else list(notes), citation=obj.get("citation", "").strip(),
        licence=obj.get("licence", ""), path=path,
    )


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")  # card and suite names: file names in a task folder, no paths


def _check_name(name, what: str, where: str = "") -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"{where}{what} name {name!r}: expected letters, digits, '_', '.', '+' or '-' (a file name in a "
                          f"task folder, not a path)")


def load_card(name: str, extra: list[Path] | None = None) -> Card:
    """The card ``<dir>/<name>.yaml`` of the first folder of ``task_dirs(extra)`` that has one."""
    _check_name(name, "task")
    path = _find(f"{name}.yaml", extra)
    if path is None:
        from xeval.base.errors import did_you_mean

        known = ", ".join(list_cards()) or "none"
        raise ConfigError(f"unknown task {name!r}{did_you_mean(name, list_cards())}: no {name}.yaml in {', '.join(map(str, task_dirs(extra)))}; "
                          f"known tasks: {known}")
    obj = _read_yaml(path)
    if obj.get("name") != name:
        raise ConfigError(f"{path}: expected 'name: {name}' (the file name), found {obj.get('name')!r}")
    return card_from_dict(obj, path)


def load_suite(name: str) -> Suite:
    """The suite ``<dir>/suites/<name>.yaml`` (first of ``task_dirs()``), or the suite file ``name`` (a path
    ending in .yaml), with its effective cards. A suite file's cards are looked up beside it and in its parent
    folder (the ``<dir>/suites/`` layout) before the task folders."""
    extra: list[Path] = []
    if _is_suite_file(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ConfigError(f"--suite {name}: no such suite file")
        extra = [path.parent, path.parent.parent] if path.parent.name == "suites" else [path.parent]
        name = path.stem
    else:
        _check_name(name, "suite")
        path = _find(f"suites/{name}.yaml")
        if path is None:
            from xeval.base.errors import did_you_mean

            known = ", ".join(list_suites()) or "none"
            raise ConfigError(f"unknown suite {name!r}{did_you_mean(name, list_suites())}: no suites/{name}.yaml in "
                              f"{', '.join(map(str, task_dirs()))}; known suites: {known}")
    obj = _read_yaml(path)
    unknown = sorted(set(obj) - _SUITE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown suite field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_SUITE_KEYS))}")
    if obj.get("name") != name:
        raise ConfigError(f"{path}: expected 'name: {name}' (the file name), found {obj.get('name')!r}")
    entries = obj.get("tasks")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: expected 'tasks:' with a list of entries like '- card: udpos'")
    cards = [_effective(load_card(_entry_name(e, path), extra), e, name, path) for e in entries]
    notes = obj.get("notes") or []
    return Suite(name=name, cards=cards, layouts=list(obj.get("layouts") or []), description=obj.get("description", ""),
                 notes=[notes] if isinstance(notes, str) else list(notes), path=str(path))


def _entry_name(entry, path: Path) -> str:
    if isinstance(entry, str):
        _check_name(entry, "task", f"{path}: ")
        return entry
    if not isinstance(entry, dict) or "card" not in entry:
        raise ConfigError(f"{path}: expected each task entry to be a card name or a mapping with 'card', found {entry!r}")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{path}: task {entry['card']!r}: unknown field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_ENTRY_KEYS))}")
    _check_name(entry["card"], "task", f"{path}: ")
    return entry["card"]


def _effective(card: Card, entry, suite: str, path: Path) -> Card:
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


# ---------------------------------------------------------------------------------------------------- listing


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]).rstrip() for r in rows]


def overview() -> str:
    """What ``xeval tasks`` prints: every card, then every suite."""
    rows = [("card", "type", "langs", "metric", "train", "hub")]
    for name in list_cards():
        card = load_card(name)
        train = f"{card.train['lang']}/{card.train['split']}" if card.train else "-"
        hub = card.hub["config"] if card.hub else "-"
        rows.append((name, card.type, str(len(card.languages)), card.metric, train, hub))
    out = [f"task cards ({', '.join(map(str, task_dirs()))}):", *("  " + r for r in _table(rows)), ""]
    rows = [("suite", "tasks", "units", "layouts", "tasks (languages)")]
    for name in list_suites():
        suite = load_suite(name)
        langs = suite.langs
        rows.append((name, str(len(langs)), str(sum(map(len, langs.values()))), ",".join(suite.layouts) or "-",
                     " ".join(f"{t}({len(v)})" for t, v in langs.items())))
    out += ["suites:", *("  " + r for r in _table(rows))]
    return "\n".join(out)


def describe(name: str) -> str:
    """One card (or suite) in full, with its hash."""
    if _find(f"{name}.yaml"):
        card = load_card(name)
        return "\n".join([f"# {card.path}", f"# hash {card.hash}", yaml.safe_dump(card.content(), sort_keys=False,
                                                                               allow_unicode=True, width=110)])
    if _find(f"suites/{name}.yaml") or _is_suite_file(name):
        suite = load_suite(name)
        out = [f"# {suite.path}", f"# hash {suite.hash}", f"suite {suite.name}: {suite.description}".rstrip()]
        for card in suite.cards:
            by_split: dict[str, list[str]] = {}
            for lang, split in card.eval_units():
                by_split.setdefault(split, []).append(lang)
            train = f"train {card.train['lang']}/{card.train['split']}; " if card.train else ""
            sub = f"; subsample {card.subsample}" if card.subsample else ""
            out.append(f"- {card.name} [{card.type}, {card.metric}] {train}"
                       + "; ".join(f"{s}: {' '.join(v)}" for s, v in by_split.items()) + sub)
            out.extend(f"    note: {n}" for n in card.notes)
        return "\n".join(out)
    from xeval.base.errors import did_you_mean

    raise ConfigError(f"unknown task or suite {name!r}{did_you_mean(name, list_cards() + list_suites())}; "
                      f"known tasks: {', '.join(list_cards())}; "
                      f"suites: {', '.join(list_suites())}")
