"""Where task cards and suites are found and how they load: the built-in ``tasks/`` folder (shipped in the wheel as
``xeval._tasks``), then the folders of ``$XEVAL_TASKS``; a card or suite is read with ``yaml.safe_load`` (a key twice an error) and
validated (``xeval.cards.card``) into the effective cards a run sees. The card and suite formats are documented in
``xeval/cards/card.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from xeval.base import strict_yaml
from xeval.base.errors import ConfigError, UserError, did_you_mean
from xeval.base.shipped import tasks_root
from xeval.base.textfile import read_utf8
from xeval.cards.card import SUITE_KEYS, Card, Suite, card_from_dict, check_name, effective_card, entry_name


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


def find(filename: str, extra: list[Path] | None = None) -> Path | None:
    for folder in task_dirs(extra):
        if (folder / filename).is_file():
            return folder / filename
    return None


def is_suite_file(name: str) -> bool:
    """``--suite`` names a YAML file (``my/suite.yaml``) rather than a suite of the task folders."""
    return name.endswith((".yaml", ".yml")) or os.sep in name or (os.altsep or os.sep) in name



# ----------------------------------------------------------------------------------------------------------- loading


def read_yaml(path: Path) -> dict:
    try:
        obj = strict_yaml.load_unique_keys(read_utf8(path, "YAML"))  # a key twice is an error, not dropped
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



def load_card(name: str, extra: list[Path] | None = None) -> Card:
    """The card ``<dir>/<name>.yaml`` of the first folder of ``task_dirs(extra)`` that has one."""
    check_name(name, "task")
    path = find(f"{name}.yaml", extra)
    if path is None:
        known = ", ".join(list_cards()) or "none"
        raise ConfigError(f"unknown task {name!r}{did_you_mean(name, list_cards())}: no {name}.yaml in {', '.join(map(str, task_dirs(extra)))}; "
                          f"known tasks: {known}")
    obj = read_yaml(path)
    if obj.get("name") != name:
        raise ConfigError(f"{path}: expected 'name: {name}' (the file name), found {obj.get('name')!r}")
    return card_from_dict(obj, path)


_KNOWN: dict[tuple, Card | None] = {}


def known_card(name: str) -> Card | None:
    """The card ``name`` as the task folders hold it now, or None where none loads (a record's card that is not on
    the search path, a name from another version): what reports read beside a record's numbers (its prose: which
    files stood in for XTREME's, where a split's data comes from), never what decides one."""
    key = (name, tuple(map(str, task_dirs())))
    if key not in _KNOWN:
        try:
            _KNOWN[key] = load_card(name)
        except UserError:  # ConfigError and unreadable files alike
            _KNOWN[key] = None
    return _KNOWN[key]


def load_suite(name: str) -> Suite:
    """The suite ``<dir>/suites/<name>.yaml`` (first of ``task_dirs()``), or the suite file ``name`` (a path
    ending in .yaml), with its effective cards. A suite file's cards are looked up beside it and in its parent
    folder (the ``<dir>/suites/`` layout) before the task folders."""
    extra: list[Path] = []
    if is_suite_file(name):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ConfigError(f"--suite {name}: no such suite file")
        extra = [path.parent, path.parent.parent] if path.parent.name == "suites" else [path.parent]
        name = path.stem
    else:
        check_name(name, "suite")
        path = find(f"suites/{name}.yaml")
        if path is None:
            known = ", ".join(list_suites()) or "none"
            raise ConfigError(f"unknown suite {name!r}{did_you_mean(name, list_suites())}: no suites/{name}.yaml in "
                              f"{', '.join(map(str, task_dirs()))}; known suites: {known}")
    obj = read_yaml(path)
    unknown = sorted(set(obj) - SUITE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown suite field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(SUITE_KEYS))}")
    if obj.get("name") != name:
        raise ConfigError(f"{path}: expected 'name: {name}' (the file name), found {obj.get('name')!r}")
    entries = obj.get("tasks")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: expected 'tasks:' with a list of entries like '- card: udpos'")
    cards = [effective_card(load_card(entry_name(e, path), extra), e, name, path) for e in entries]
    notes = obj.get("notes") or []
    return Suite(name=name, cards=cards, layouts=list(obj.get("layouts") or []), description=obj.get("description", ""),
                 notes=[notes] if isinstance(notes, str) else list(notes), path=str(path))



# ---------------------------------------------------------------------------------------------------- listing



