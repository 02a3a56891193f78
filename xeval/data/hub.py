"""The Hugging Face hub as a data source: ``datasets.load_dataset(card.hub.path, config, revision=..., split=...)``,
with the hub's columns mapped to xeval's typed examples.

The card's ``hub`` block::

    hub:
      path: google/xtreme
      config: "PAN-X.{lang}"          # template: {lang}, {name} (card.names[lang])
      revision: <commit id>           # pinned, so numbers stay comparable
      splits: {dev: validation}       # xeval split -> hub split (default: same name)
      columns: {tokens: tokens, tags: ner_tags}   # xeval field -> hub column (defaults per reader format below)
      filter: {column: language, equals: "{lang}"}  # or {column: id, prefix: "{name}-"}: one config, many languages

A local mirror (``--data hub:DIR``) holds ``DIR/<config>/`` as the hub lays it out (``<split>-*.parquet``) or as
``Dataset(Dict).save_to_disk`` writes it; it is read without network and without writing a cache.
"""

from __future__ import annotations

from pathlib import Path

from xeval.base.errors import ConfigError, DataError, UserError
from xeval.data.examples import Answer, Bitext, QAExample, SentencePair, TaggedSentence

# By the card's reader format (the example type it yields), as for files: xeval field -> the hub's column.
_DEFAULT_COLUMNS = {
    "tagging": {"tokens": "tokens", "tags": "tags"},
    "pairs": {"text_a": "sentence1", "text_b": "sentence2", "label": "label"},
    "squad": {"id": "id", "question": "question", "context": "context", "answers": "answers", "title": "title"},
    "tatoeba": {"src": "source_sentence", "tgt": "target_sentence"},
}


def _hub(card) -> dict:
    if not card.hub:
        raise ConfigError(f"{card.path or card.name}: task {card.name!r} has no hub source; pass --data DIR")
    if card.format not in _DEFAULT_COLUMNS:
        raise ConfigError(f"{card.path or card.name}: the hub holds no {card.format!r}-format data xeval can read for "
                          f"{card.name!r} (it reads {', '.join(_DEFAULT_COLUMNS)})")
    return card.hub


def _fill(template: str, card, lang: str) -> str:
    return template.format(lang=lang, name=card.names.get(lang, lang))


def identity(card, lang: str, split: str) -> dict:
    hub = _hub(card)
    out = {"path": hub["path"], "config": _fill(hub["config"], card, lang),
           "split": (hub.get("splits") or {}).get(split, split), "revision": hub["revision"]}
    if hub.get("note"):  # how the hub's data differs from XTREME's files (recorded in every hub record)
        out["note"] = hub["note"]
    return out


def _datasets():
    """The ``datasets`` package, an optional dependency (the ``hub`` extra): only ``--data hub`` needs it."""
    try:
        import datasets
    except ImportError:
        raise UserError("--data hub needs the Hugging Face datasets package, which is not installed: "
                        "pip install 'xeval[hub]'") from None
    return datasets


def dataset(card, lang: str, split: str, mirror: Path | None = None):
    """The ``datasets.Dataset`` for one language and split (before filtering)."""
    datasets = _datasets()
    ident = identity(card, lang, split)
    if mirror is None:
        try:
            return datasets.load_dataset(ident["path"], ident["config"], revision=ident["revision"], split=ident["split"])
        except Exception as err:  # network, missing config or split: the user's to fix, not a traceback
            raise UserError(
                f"cannot load {ident['path']} config {ident['config']} split {ident['split']} at revision "
                f"{ident['revision']}: {type(err).__name__}: {err}"
            ) from None
    folder = mirror / ident["config"]
    if (folder / "dataset_dict.json").is_file():
        ds = datasets.load_from_disk(str(folder))
        if ident["split"] not in ds:
            raise DataError(folder, None, f"expected a {ident['split']!r} split, found {', '.join(ds)}")
        return ds[ident["split"]]
    if (folder / ident["split"] / "state.json").is_file():
        return datasets.load_from_disk(str(folder / ident["split"]))
    files = sorted(folder.glob(f"{ident['split']}-*.parquet")) + sorted(folder.glob(f"{ident['split']}/*.parquet"))
    if not files:
        raise DataError(folder, None, f"missing hub mirror data for task {card.name}, language {lang}, split {split}: "
                                      f"expected {ident['split']}-*.parquet or a save_to_disk folder")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.concat_tables([pq.read_table(f) for f in files])
    return datasets.Dataset(table)  # features come from the parquet schema's "huggingface" metadata


def load(card, lang: str, split: str, mirror: Path | None = None) -> list:
    hub = _hub(card)
    ds = dataset(card, lang, split, mirror)
    columns = {**_DEFAULT_COLUMNS[card.format], **(hub.get("columns") or {})}
    ident = identity(card, lang, split)
    source = f"hf://{ident['path']}@{ident['revision']}/{ident['config']}/{ident['split']}"
    missing = [c for k, c in columns.items() if c not in ds.column_names and k != "title"]
    if missing:
        raise DataError(source, None, f"expected column(s) {', '.join(missing)}, found {', '.join(ds.column_names)}")
    rows = list(_filtered(ds, hub.get("filter"), card, lang))
    convert = {"tagging": _tagging, "pairs": _pair, "squad": _qa, "tatoeba": _bitext}[card.format]
    return [convert(row, i, columns, ds.features, lang, split, source) for i, row in rows]


def _filtered(ds, spec, card, lang):
    if not spec:
        yield from enumerate(ds)
        return
    column = spec["column"]
    equals = _fill(spec["equals"], card, lang) if "equals" in spec else None
    prefix = _fill(spec["prefix"], card, lang) if "prefix" in spec else None
    for i, row in enumerate(ds):
        value = str(row[column])
        if (equals is not None and value == equals) or (prefix is not None and value.startswith(prefix)):
            yield i, row


def _names(features, column):
    """ClassLabel names of a column (or of its list items), else None."""
    feature = features.get(column) if features else None
    feature = getattr(feature, "feature", feature)
    return getattr(feature, "names", None)


def _label(value, names):
    if value is None or value == -1:
        return None
    return names[value] if names is not None and isinstance(value, int) else str(value)


def _tagging(row, i, cols, features, lang, split, source):
    names = _names(features, cols["tags"])
    tags = row[cols["tags"]]
    return TaggedSentence(list(row[cols["tokens"]]), None if tags is None else [_label(t, names) for t in tags],
                          lang, split, source, i)


def _pair(row, i, cols, features, lang, split, source):
    label = _label(row[cols["label"]], _names(features, cols["label"]))
    return SentencePair(row[cols["text_a"]], row[cols["text_b"]], label, lang, split, source, i)


def _qa(row, i, cols, features, lang, split, source):
    answers = row[cols["answers"]] or {"text": [], "answer_start": []}
    return QAExample(
        id=str(row[cols["id"]]), question=row[cols["question"]], context=row[cols["context"]],
        answers=[Answer(t, int(s)) for t, s in zip(answers["text"], answers["answer_start"])],
        lang=lang, split=split, source=source, line=i, title=row.get(cols.get("title", "title"), "") or "",
    )


def _bitext(row, i, cols, features, lang, split, source):
    return Bitext(row[cols["src"]], row[cols["tgt"]], lang, split, source, i + 1)
