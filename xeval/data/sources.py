"""Where a task's examples come from: a data root (``--data`` / ``$XEVAL_DATA`` / ``../shared/data``) in one of two
layouts, or the Hugging Face hub; the card says which file(s) each split uses in each layout.

Layouts:
    shared   ``../shared/data`` (``udpos_xtreme/``, ``panx_xtreme/``, ``xnli_xtreme/``, ``tatoeba/`` in LASER names, ...)
    xtreme   the official XTREME download folder (``udpos/train-en.tsv``, ``panx/``, ``xnli/``, ``pawsx/``,
             ``xquad/``, ``mlqa/``, ``tydiqa/``, ``tatoeba/``, ``bucc2018/``, ``squad/``)
    hub      ``datasets.load_dataset(card.hub.path, config, revision=card.hub.revision, split=...)``; ``--data hub``.
             ``--data hub:DIR`` reads a local mirror instead (``DIR/<config>/`` holding either the hub's parquet
             files ``<split>-*.parquet`` or a ``DatasetDict.save_to_disk`` folder): tests and offline use.

Subsampling: when the card asks for ``n`` examples of a split, ``load_examples`` keeps ``n`` examples drawn by
``random.Random(f"{seed}/{task}/{lang}/{split}")`` (Python's string seeding is stable across runs and machines),
in file order. The same seed (default 0) gives the same examples on every run and every training seed; the choice
is recorded by ``data_identity``.
"""

from __future__ import annotations

import glob as globlib
import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from xeval.base.errors import DataError, UserError
from xeval.base.textfile import line_of, read_json
from xeval.data._text import iter_lines
from xeval.data.examples import Bitext, SentencePair

# Reader keys a card's ``format`` may name; each maps to a loader below.
FORMATS = ("tagging", "pairs", "conllu", "mnli_json", "squad", "tatoeba", "bucc", "alignment", "dictionary")
_PARTS = {"tatoeba": ("src", "tgt"), "bucc": ("src", "tgt", "gold"), "alignment": ("text", "gold")}
_OPTIONAL_PARTS = {"bucc": ("gold",)}  # label-free without it: mined pairs are exported, never scored
_OPTIONS = {"format", "gold_base", "exclude_contexts_from", "note"}
_SHARED_MARKERS = ("udpos_xtreme", "panx_xtreme", "xnli_xtreme", "pawsx_xtreme", "tydiqa_goldp_v1.1", "mlqa_v1")
_XTREME_MARKERS = ("udpos", "panx", "xnli", "pawsx", "mlqa", "tydiqa", "bucc2018", "squad")
_HASH_LIMIT = 256 << 20  # files above this are identified by size + mtime instead of sha256


# -------------------------------------------------------------------------------------------------------- data root


@dataclass(frozen=True)
class DataRoot:
    """A resolved data source. ``path`` is None for the online hub."""

    layout: str  # "shared" | "xtreme" | "hub"
    path: Path | None = None

    @classmethod
    def resolve(cls, arg: str | Path | None = None, cwd: str | Path | None = None) -> DataRoot:
        """``--data`` when given, else ``$XEVAL_DATA``, else ``../shared/data`` next to the cwd or the repository."""
        if arg is None or str(arg) == "":
            env = os.environ.get("XEVAL_DATA")
            if env:
                return cls._from(env, "$XEVAL_DATA")
            repo = Path(__file__).resolve().parents[2]
            for base in (Path(cwd or Path.cwd()), repo):
                candidate = base.parent / "shared" / "data"
                if candidate.is_dir():
                    return cls._from(candidate, "../shared/data")
            raise UserError(
                "no data: pass --data DIR (an XTREME download folder or a copy of ../shared/data, or 'hub'), "
                "or set XEVAL_DATA"
            )
        return cls._from(arg, "--data")

    @classmethod
    def _from(cls, arg: str | Path, origin: str) -> DataRoot:
        text = str(arg)
        if text == "hub":
            return cls("hub", None)
        if text.startswith("hub:"):
            mirror = Path(text[4:]).expanduser()
            if not mirror.is_dir():
                raise UserError(f"{mirror}: expected a local hub mirror folder ({origin}), found nothing there")
            return cls("hub", mirror.resolve())
        path = Path(text).expanduser()
        if not path.is_dir():
            raise UserError(f"{path}: expected a data folder ({origin}), found nothing there")
        return cls(detect_layout(path), path.resolve())

    @property
    def online(self) -> bool:
        return self.layout == "hub" and self.path is None

    def describe(self) -> str:
        if self.layout == "hub":
            return f"hub mirror {self.path}" if self.path else "Hugging Face hub"
        return f"{self.path} ({self.layout} layout)"


def detect_layout(path: Path) -> str:
    """``shared`` or ``xtreme`` from the folder names; a UserError when it is neither."""
    if any((path / m).is_dir() for m in _SHARED_MARKERS):
        return "shared"
    if any((path / m).is_dir() for m in _XTREME_MARKERS):
        return "xtreme"
    raise UserError(
        f"{path}: expected an XTREME download folder (udpos/, panx/, xnli/, ...) or the shared data layout "
        f"(udpos_xtreme/, panx_xtreme/, ...), found neither"
    )


# ----------------------------------------------------------------------------------------------- resolving sources


@dataclass
class Resolved:
    """A card's source for one (language, split) in one layout, with templates filled in and globs expanded."""

    format: str
    parts: dict[str, list[Path]]  # part name -> files, in order
    options: dict

    @property
    def files(self) -> list[Path]:
        out = [p for paths in self.parts.values() for p in paths]
        extra = self.options.get("exclude_contexts_from")
        return out + ([Path(extra)] if extra else [])


def _fill(template: str, card, lang: str, split: str) -> str:
    """The template filled in: a relative path that stays inside the data root (``../`` or an absolute path in a
    card would read any file on the machine as task data)."""
    try:
        rel = template.format(lang=lang, split=split, name=card.names.get(lang, lang))
    except (KeyError, IndexError) as err:
        raise UserError(f"{card.path or card.name}: bad path template {template!r} ({err})") from None
    norm = os.path.normpath(rel)
    if os.path.isabs(rel) or norm == ".." or norm.startswith(".." + os.sep):
        raise UserError(f"{card.path or card.name}: expected a path inside the data folder, found {rel!r} "
                        f"(files of task {card.name}, language {lang}, split {split})")
    return rel


def resolve(card, lang: str, split: str, root: DataRoot) -> Resolved:
    """The files ``card`` reads for ``lang``/``split`` under ``root``; a UserError naming each missing one."""
    if root.layout == "hub":
        raise UserError("resolve() is for file layouts; the hub is read by load_examples")
    spec = card.source(root.layout, split)
    if isinstance(spec, str | list):
        spec = {"path": spec}
    fmt = spec.get("format", card.format)
    options = {k: v for k, v in spec.items() if k in _OPTIONS}
    parts: dict[str, list[Path]] = {}
    for part, value in spec.items():
        if part in _OPTIONS:
            continue
        templates = value if isinstance(value, list) else [value]
        paths: list[Path] = []
        for template in templates:
            rel = _fill(str(template), card, lang, split)
            if any(ch in rel for ch in "*?["):
                found = sorted(Path(p) for p in globlib.glob(str(root.path / rel)))
                if not found:
                    raise _missing(root.path / rel, card, lang, split)
                paths.extend(found)
            else:
                paths.append(root.path / rel)
        parts[part] = paths
    want = _PARTS.get(fmt, ("path",))
    if set(parts) != set(want):  # optional parts are dropped only after this check, when their file is absent
        raise UserError(
            f"{card.path or card.name}: files.{root.layout}.{split}: format {fmt!r} expects parts "
            f"{', '.join(want)}, found {', '.join(parts) or 'none'}"
        )
    if "exclude_contexts_from" in options:
        options["exclude_contexts_from"] = str(root.path / _fill(options["exclude_contexts_from"], card, lang, split))
    for part in _OPTIONAL_PARTS.get(fmt, ()):  # e.g. BUCC's test gold, which XTREME's download does not have
        if all(not p.is_file() for p in parts[part]):
            del parts[part]
    resolved = Resolved(fmt, parts, options)
    for path in resolved.files:
        if not path.is_file():
            raise _missing(path, card, lang, split)
    return resolved


def _missing(path: Path, card, lang: str, split: str) -> UserError:
    return DataError(path, None, f"missing file: task {card.name} needs it for language {lang}, split {split}")


# ---------------------------------------------------------------------------------------------------- loading


def load_examples(card, lang: str, split: str, root: DataRoot, seed: int = 0) -> list:
    """Typed examples of ``card`` for one language and split, subsampled as the card says (deterministically).

    Returns TaggedSentence / SentencePair / QAExample / Bitext lists, a one-element list holding the BuccCorpus,
    AlignedPair lists, or (src, tgt) word pairs for dictionaries.
    """
    examples = _load_all(card, lang, split, root)
    keep = _subsample_indices(card, lang, split, len(examples), seed)
    return examples if keep is None else [examples[i] for i in keep]


def _load_all(card, lang: str, split: str, root: DataRoot) -> list:
    from xeval.data.validate import check_examples

    if root.layout == "hub":
        from xeval.data import hub

        examples = hub.load(card, lang, split, root.path)
        ident = hub.identity(card, lang, split)
        where, fmt = f"hf://{ident['path']}@{ident['revision']}/{ident['config']}/{ident['split']}", "hub"
    else:
        src = resolve(card, lang, split, root)
        examples = _LOADERS[src.format](src, lang, split)
        where, fmt = ", ".join(map(str, src.files)), src.format
    check_examples(card, lang, split, examples, where, line_per_token=fmt == "tagging")
    return examples


def _subsample_indices(card, lang: str, split: str, total: int, seed: int) -> list[int] | None:
    n = card.sample_size(split)
    if n is None or card.format in ("bucc", "alignment") or n >= total:
        return None
    rng = random.Random(f"{seed}/{_drawn_as(card, split)}/{lang}/{split}")
    return sorted(rng.sample(range(total), int(n)))


def _drawn_as(card, split: str) -> str:
    """The task name a subsample is drawn under: the card's own, or for the training split ``subsample.train_as``
    (tasks that train on the same file draw the same examples, so they can share one fine-tuned model)."""
    if card.train and split == card.train.get("split") and card.subsample.get("train_as"):
        return str(card.subsample["train_as"])
    return card.name


def count_examples(card, lang: str, split: str, root: DataRoot, seed: int = 0) -> tuple[int, int]:
    """(examples used after subsampling, examples in the source) — what ``data check`` prints."""
    examples = _load_all(card, lang, split, root)
    if card.format == "bucc":
        corpus = examples[0]
        total = len(corpus.gold)
        return total, total
    keep = _subsample_indices(card, lang, split, len(examples), seed)
    return (len(examples) if keep is None else len(keep)), len(examples)


# ------------------------------------------------------------------------------------------------- provenance

_HASHES: dict[tuple[str, int, int], str] = {}


def file_identity(path: Path) -> dict:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if stat.st_size > _HASH_LIMIT:
        return {"path": str(path), "size": stat.st_size, "mtime": int(stat.st_mtime)}
    if key not in _HASHES:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return {"path": str(path), "size": stat.st_size, "sha256": _HASHES[key]}


def data_identity(card, lang: str, split: str, root: DataRoot, seed: int = 0) -> dict:
    """The ``data`` block of a result record: where the examples came from and how they were subsampled."""
    n = card.sample_size(split)
    subsample = None
    if n is not None and card.format not in ("bucc", "alignment"):
        subsample = {"n": int(n), "seed": seed, "method": "random.Random(f'{seed}/{task}/{lang}/{split}').sample, file order kept"}
        if _drawn_as(card, split) != card.name:
            subsample["task"] = _drawn_as(card, split)
    if root.layout == "hub":
        from xeval.data import hub

        return {"layout": "hub", "root": str(root.path) if root.path else None, "files": [],
                "hub": hub.identity(card, lang, split), "revision": (card.hub or {}).get("revision"),
                "subsample": subsample}
    src = resolve(card, lang, split, root)
    files = [file_identity(p) for p in src.files]
    for item in files:
        item["path"] = os.path.relpath(item["path"], root.path)
    options = {k: v for k, v in src.options.items() if k != "note"}
    if "exclude_contexts_from" in options:
        options["exclude_contexts_from"] = os.path.relpath(options["exclude_contexts_from"], root.path)
    return {"layout": root.layout, "root": str(root.path), "files": files, "format": src.format,
            "options": options, "revision": None, "subsample": subsample}


# ---------------------------------------------------------------------------------------------------- loaders


def _each(src: Resolved, read) -> list:
    out: list = []
    for path in src.parts["path"]:
        out.extend(read(path))
    return out


def _load_tagging(src, lang, split):
    from xeval.data.xtreme_tsv import read_tagging

    return _each(src, lambda p: read_tagging(p, lang, split))


def _load_pairs(src, lang, split):
    from xeval.data.xtreme_tsv import read_pairs

    return _each(src, lambda p: read_pairs(p, lang, split))


def _load_conllu(src, lang, split):
    from xeval.data.conllu import read_conllu

    return _each(src, lambda p: read_conllu(p, lang, split))


def _load_squad(src, lang, split):
    from xeval.data.squad_json import read_squad

    examples = _each(src, lambda p: read_squad(p, lang, split))
    exclude = src.options.get("exclude_contexts_from")
    if exclude:
        # SQuAD dev minus the paragraphs XQuAD translated (matched on the context text), so an English model
        # trained on it never sees an XQuAD test paragraph.
        banned = {ex.context for ex in read_squad(Path(exclude), "en", "test")}
        examples = [ex for ex in examples if ex.context not in banned]
    return examples


def _load_mnli_json(src, lang, split) -> list[SentencePair]:
    """The MultiNLI subset's ``{"0": {"text_a", "text_b", "label"}, ...}`` JSON (glue_pretrain_MNLI)."""
    out: list[SentencePair] = []
    labels = {"entailment", "neutral", "contradiction"}
    for path in src.parts["path"]:
        obj, text = read_json(path, "MultiNLI JSON")  # a BOM is accepted, as in SQuAD JSON
        if not isinstance(obj, dict):
            raise DataError(path, 1, f"expected an object of numbered examples, found {type(obj).__name__}")
        for i, (key, item) in enumerate(obj.items()):
            if not isinstance(item, dict) or not {"text_a", "text_b", "label"} <= set(item):
                raise DataError(path, _json_key_line(text, key), f"example {key!r}: expected text_a, text_b and label, found {item!r:.80}")
            for field in ("text_a", "text_b"):
                if not isinstance(item[field], str) or not item[field].strip() or "\x00" in item[field]:
                    raise DataError(path, _json_key_line(text, key), f"example {key!r}: expected a non-empty string {field} without NUL "
                                                f"bytes, found {item[field]!r:.60}")
            if item["label"] not in labels:
                raise DataError(path, _json_key_line(text, key), f"example {key!r}: expected a label in {sorted(labels)}, found {item['label']!r}")
            out.append(SentencePair(item["text_a"], item["text_b"], item["label"], lang, split, str(path), i))
    return out


def _json_key_line(text: str, key: str) -> int:
    return line_of(text, json.dumps(key) + ":") or 1


def _load_tatoeba(src, lang, split) -> list[Bitext]:
    (src_path,), (tgt_path,) = src.parts["src"], src.parts["tgt"]
    if src_path.parent == tgt_path.parent and src_path.name.startswith("tatoeba.") and tgt_path.suffix == ".eng":
        from xeval.data.tatoeba import read_tatoeba

        return read_tatoeba(src_path.parent, lang)
    # Any other pair of line-aligned files (e.g. XTREME's ``xx-en.xx`` / ``xx-en.en``).
    a = [line for _, line in iter_lines(src_path)]
    b = [line for _, line in iter_lines(tgt_path)]
    if len(a) != len(b):
        raise DataError(tgt_path, min(len(a), len(b)) + 1,
                        f"expected as many lines as {src_path} ({len(a)}), found {len(b)}")
    for i, (x, y) in enumerate(zip(a, b), 1):
        if not x.strip() or not y.strip():
            raise DataError(src_path if not x.strip() else tgt_path, i, "expected a sentence, found an empty line")
    return [Bitext(x, y, lang, split, str(src_path), i + 1) for i, (x, y) in enumerate(zip(a, b))]


def _load_bucc(src, lang, split):
    from xeval.data.bucc_files import read_bucc

    (src_path,) = src.parts["src"]
    pair = src_path.name.split(".")[0]  # "zh-en" from "zh-en.dev.zh"
    corpus = read_bucc(src_path.parent, pair=pair, split=split, require_gold="gold" in src.parts)
    if "gold" in src.parts and not corpus.gold:
        raise DataError(src.parts["gold"][0], None, "expected gold pairs src-id<TAB>tgt-id, found none (an empty "
                                                     "file; leave the file out for a label-free corpus)")
    return [corpus]


def _load_alignment(src, lang, split):
    from xeval.data.alignment_gold import read_alignment

    (text,), (gold,) = src.parts["text"], src.parts["gold"]
    return read_alignment(text, gold, lang, gold_base=int(src.options.get("gold_base", 1)))


def _load_dictionary(src, lang, split):
    from xeval.data.dictionaries import read_dictionary

    return _each(src, read_dictionary)


_LOADERS = {
    "tagging": _load_tagging, "pairs": _load_pairs, "conllu": _load_conllu, "mnli_json": _load_mnli_json,
    "squad": _load_squad, "tatoeba": _load_tatoeba, "bucc": _load_bucc, "alignment": _load_alignment,
    "dictionary": _load_dictionary,
}
assert set(_LOADERS) == set(FORMATS)

__all__ = ["DataRoot", "FORMATS", "Resolved", "count_examples", "data_identity", "detect_layout", "load_examples",
           "resolve"]
