"""What ``xeval tasks`` prints: every card and suite in a table, or one card / suite in full with its hash."""

from __future__ import annotations

import yaml

from xeval.base.errors import ConfigError, did_you_mean
from xeval.cards.catalog import find, is_suite_file, list_cards, list_suites, load_card, load_suite, task_dirs


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
    if find(f"{name}.yaml"):
        card = load_card(name)
        return "\n".join([f"# {card.path}", f"# hash {card.hash}", yaml.safe_dump(card.content(), sort_keys=False,
                                                                               allow_unicode=True, width=110)])
    if find(f"suites/{name}.yaml") or is_suite_file(name):
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
    raise ConfigError(f"unknown task or suite {name!r}{did_you_mean(name, list_cards() + list_suites())}; "
                      f"known tasks: {', '.join(list_cards())}; "
                      f"suites: {', '.join(list_suites())}")
