"""The pre-training corpora: which are read, how they are mixed, how languages are sampled, what is held out.

Only ``parallel/`` and ``monolingual/`` of a data root are ever read (never evaluation text). Two layouts
(``data.layout``):

- ``shared`` (the shared data layout): pairs are the general-domain pool (``general``, the default:
  ``parallel/general/en-xx.tsv.gz``, WMT news, NTREX, TICO-19, XPersona, Multi30k ...; its Traditional Chinese file
  ``en-zh-Hant`` joins ``en-zh``, as Tatoeba's Chinese is largely Traditional), gettext UI strings
  (``parallel/gettext_mo/en-xx.tsv.gz``), Multi30k
  train+val (line-aligned ``train.xx.gz``), WMT22 general test sets (``generaltest2022.a-b.src.a`` + ``.ref.A.b``),
  keyed ``en-xx`` (English first); monolingual text is Debian man pages and fortunes (``<lang>.txt.gz``, one
  paragraph a line);
- ``synthetic`` (a world written by ``xeval synth``, or any folder laid out like one): ``monolingual/<lang>.txt[.gz]``
  and ``parallel/<a>-<b>.tsv[.gz]`` (``a<TAB>b[<TAB>domain]``, an optional ``#`` header line), keyed ``a-b``.

The files are read by ``xeval/data/corpora.py``; every line then passes the filters of ``engine/cleaning.py``
(counted per language in the run log).

Language sampling: p_j ∝ m_j^alpha (alpha = 0.7), m_j = number of lines (pairs) of language j after cleaning.

A fixed 1 % of lines (by a hash of the text) is held out of training (``split="heldout"``) for in-domain probes.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xeval.base.errors import ConfigError
from xeval.data.corpora import iter_line_aligned, iter_monolingual, iter_parallel_tsv
from xeval.data.dictionaries import read_dictionary
from xeval.engine.cleaning import CleanConfig, clean_mono, clean_pair


# --------------------------------------------------------------------------------------------------- where
def default_data_root() -> Path:
    """$XEVAL_DATA, else ``shared/data`` beside the checkout."""
    env = os.environ.get("XEVAL_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def data_root(dc) -> Path:
    """The corpora's folder: ``data.root``, else (shared layout) $XEVAL_DATA or ../shared/data."""
    if dc.root:
        return Path(dc.root)
    if dc.layout != "shared":
        raise ConfigError(f"data.layout {dc.layout}: data.root (--data) must name the corpora's folder")
    return default_data_root()


# --------------------------------------------------------------------------------------------------- catalog
MONO_LANG = {"zh_CN": "zh", "pt-br": "pt"}  # file stem -> language code


PARALLEL_CORPORA = ("general", "gettext", "multi30k", "wmt22")
DEFAULT_PARALLEL = ("general",)  # the general-domain pool: everyday text, like the evaluation sets' domain
GENERAL_KEY = {"en-zh-Hant": "en-zh"}  # Traditional Chinese (NTREX) joins Chinese: one code per language


def discover(root: Path, parallel=DEFAULT_PARALLEL, monolingual=("manpages", "fortunes")):
    """Map the shared data to sources: ``pairs[key] = [(kind, paths...)]``, ``mono[lang] = [path, ...]``."""
    root = Path(root)
    pairs: dict[str, list[tuple]] = defaultdict(list)
    mono: dict[str, list[Path]] = defaultdict(list)
    known_p, known_m = set(PARALLEL_CORPORA), {"manpages", "fortunes"}
    for name in set(parallel) - known_p:
        raise ConfigError(f"unknown parallel corpus {name!r}; expected one of {sorted(known_p)}")
    for name in set(monolingual) - known_m:
        raise ConfigError(f"unknown monolingual corpus {name!r}; expected one of {sorted(known_m)}")
    par = root / "parallel"
    if "general" in parallel:
        for f in sorted((par / "general").glob("en-*.tsv.gz")):
            stem = f.name[: -len(".tsv.gz")]
            pairs[GENERAL_KEY.get(stem, stem)].append(("tsv", f))
    if "gettext" in parallel:
        for f in sorted((par / "gettext_mo").glob("en-*.tsv.gz")):
            pairs[f.name.split(".")[0]].append(("tsv", f))
    if "multi30k" in parallel:
        folder = par / "multi30k_task1_raw"
        for lang in ("de", "fr", "cs"):
            for split in ("train", "val"):
                a, b = folder / f"{split}.en.gz", folder / f"{split}.{lang}.gz"
                if a.is_file() and b.is_file():
                    pairs[f"en-{lang}"].append(("aligned", a, b))
    if "wmt22" in parallel:
        folder = par / "wmt22_generaltest"
        for src in sorted(folder.glob("generaltest2022.*-*.src.*")):
            direction = src.name.split(".")[1]
            s, t = direction.split("-")
            refs = sorted(folder.glob(f"generaltest2022.{direction}.ref.*.{t}"))
            if not refs:
                continue
            if t == "en":  # key English first, sides swapped so that the first side is English
                pairs[f"en-{s}"].append(("aligned", refs[0], src))
            else:
                pairs[f"{s}-{t}"].append(("aligned", src, refs[0]))
    mono_root = root / "monolingual"
    for name, folder in (("manpages", "debian_manpages"), ("fortunes", "debian_fortunes")):
        if name in monolingual:
            for f in sorted((mono_root / folder).glob("*.txt.gz")):
                stem = f.name[: -len(".txt.gz")]
                mono[MONO_LANG.get(stem, stem)].append(f)
    return dict(pairs), dict(mono)


LAYOUTS = ("shared", "synthetic")


def discover_synthetic(root: Path):
    """Sources of the synthetic layout, shaped like ``discover``'s: ``monolingual/<lang>.txt[.gz]`` and
    ``parallel/<a>-<b>.tsv[.gz]``."""
    root = Path(root)
    pairs: dict[str, list[tuple]] = defaultdict(list)
    mono: dict[str, list[Path]] = defaultdict(list)
    for f in sorted((root / "parallel").glob("*")):
        if f.name.endswith((".tsv", ".tsv.gz")):
            key = f.name.split(".")[0]
            if key.count("-") != 1 or not all(key.split("-")):
                raise ConfigError(f"{f}: expected parallel/<a>-<b>.tsv[.gz] (two language codes)")
            pairs[key].append(("tsv", f))
    for f in sorted((root / "monolingual").glob("*")):
        if f.name.endswith((".txt", ".txt.gz")):
            mono[f.name.split(".")[0]].append(f)
    return dict(pairs), dict(mono)


# --------------------------------------------------------------------------------------------------- reading
def read_pairs_tsv(path: Path) -> Iterator[tuple[str, str, str]]:
    """(src, tgt, domain) of a ``src<TAB>tgt[<TAB>domain]`` file (gettext ``en-xx.tsv.gz``: msgid, msgstr,
    catalog; the '#' header line is skipped)."""
    for pair in iter_parallel_tsv(path):
        yield pair.src, pair.tgt, pair.domain


def read_line_aligned(a: Path, b: Path) -> Iterator[tuple[str, str, str]]:
    """(line of ``a``, line of ``b``, no domain) of two line-aligned files."""
    for x, y in iter_line_aligned(a, b):
        yield x, y, ""


def is_heldout(text: str, permille: int = 10) -> bool:
    """A fixed ~1 % of lines, chosen by a hash of the text (stable across runs, machines and Python versions)."""
    return zlib.crc32(text.encode("utf-8")) % 1000 < permille


@dataclass
class Corpora:
    pairs: dict[str, list[tuple[str, str]]]
    mono: dict[str, list[str]]
    report: dict[str, dict[str, Counter]] = field(default_factory=dict)  # "pairs"/"mono" -> key -> Counter
    pairs_in_mono: bool = False  # the sides of the pairs were added to ``mono`` already

    def mix_lines(self, tokenizer) -> list[str]:
        """The monolingual (MLM) text per language: lines from the monolingual corpora, lines from the pairs'
        sides, and the tokens they make (``tokenizer``, no special tokens) -- what the MLM stream samples from."""
        out = []
        for lang, rows in sorted(self.mono.items()):
            c = self.report.get("mix", {}).get(lang, Counter())
            tokens = sum(len(e.ids) for e in tokenizer.encode_batch(rows, add_special_tokens=False))
            out.append(f"mono mix {lang:6s} lines {len(rows):7d} (monolingual corpora {c['monolingual']:7d}, "
                       f"pair sides {c['pair_sides']:7d}) tokens {tokens:9d}")
        return out

    def log_lines(self) -> list[str]:
        out = []
        for kind in ("pairs", "mono"):  # "mix" is mix_lines' (it needs the tokenizer)
            for key, c in sorted(self.report.get(kind, {}).items()):
                total = sum(c.values())
                dropped = ", ".join(f"{r} {n}" for r, n in sorted(c.items()) if r not in ("kept", "heldout") and n)
                out.append(
                    f"clean {kind:5s} {key:6s} read {total:7d} kept {c['kept']:7d} ({100 * c['kept'] / max(total, 1):5.1f} %)"
                    f" heldout {c['heldout']:5d}" + (f" dropped: {dropped}" if dropped else "")
                )
        return out


def load_corpora(
    root: Path,
    parallel=DEFAULT_PARALLEL,
    monolingual=("manpages", "fortunes"),
    languages: list[str] | None = None,
    clean: CleanConfig | None = None,
    max_lines: int | None = None,
    split: str = "train",
    seed: int = 0,
    pairs_as_mono: bool = False,
    layout: str = "shared",
) -> Corpora:
    """Read, clean and split every source. ``max_lines`` caps each pair key / language after cleaning (a seeded
    sample, so small presets start fast); ``languages`` keeps only pairs en-xx / monolingual xx with xx listed
    (a pair key a-b of the synthetic layout needs both a and b listed). ``parallel`` / ``monolingual`` name the
    shared layout's corpora; the synthetic layout reads every file it has."""
    clean = clean or CleanConfig()
    root = Path(root)
    if layout not in LAYOUTS:
        raise ConfigError(f"data.layout {layout!r}: expected one of {list(LAYOUTS)}")
    if not (root / "parallel").is_dir() and not (root / "monolingual").is_dir():
        what = "the shared data" if layout == "shared" else "a synthetic world"
        raise ConfigError(f"{root}: expected {what} (parallel/ and monolingual/ folders), found neither")
    pair_src, mono_src = _sources(root, parallel, monolingual, languages, layout)
    report: dict[str, dict[str, Counter]] = {"pairs": {}, "mono": {}}
    pairs: dict[str, list[tuple[str, str]]] = {}
    for key, sources in sorted(pair_src.items()):
        rows = []
        for source in sources:
            rows += read_pairs_tsv(source[1]) if source[0] == "tsv" else read_line_aligned(source[1], source[2])

        def clean_row(row):
            res = clean_pair(row[0], row[1], row[2], clean)
            return res if isinstance(res, str) else (res, res[0])

        counts, out = _clean_until(rows, clean_row, max_lines, seed, key, split)
        report["pairs"][key] = counts
        if out:
            pairs[key] = out
    mono: dict[str, list[str]] = {}
    for lang, paths in sorted(mono_src.items()):
        rows = [line for path in paths for line in iter_monolingual(path)]

        def clean_line(line):
            res = clean_mono(line, clean)
            return res[1:] if res.startswith("\0") else (res, res)

        counts, out = _clean_until(rows, clean_line, max_lines, seed, lang, split)
        report["mono"][lang] = counts
        if out:
            mono[lang] = out
    report["mix"] = {lang: Counter(monolingual=len(rows)) for lang, rows in mono.items()}
    if pairs_as_mono:  # the sides of pairs join their language's monolingual lines (each distinct line once)
        for key, rows in pairs.items():
            for side, lang in enumerate(key.split("-")):
                seen = set(mono.get(lang, ()))
                extra = [r[side] for r in rows if r[side] not in seen and not seen.add(r[side])]
                mono[lang] = mono.get(lang, []) + extra
                report["mix"].setdefault(lang, Counter())["pair_sides"] += len(extra)
    return Corpora(pairs, mono, report, pairs_in_mono=pairs_as_mono)


def _sources(root: Path, parallel, monolingual, languages, layout: str):
    """The sources ``load_corpora`` reads: (pair key -> sources, language -> paths), after the ``languages`` filter."""
    if layout == "shared":
        pair_src, mono_src = discover(root, parallel, monolingual)
    else:
        pair_src, mono_src = discover_synthetic(root)
    keep = set(languages) if languages else None
    pair_src = {k: v for k, v in pair_src.items() if keep is None or set(k.split("-")) <= keep | {"en"}}
    mono_src = {k: v for k, v in mono_src.items() if keep is None or k in keep}
    return pair_src, mono_src


def corpus_identity(root: Path, dc) -> dict[str, dict]:
    """{file (relative to the corpora's folder): {"bytes", "sha256"}} of every corpus file a run with the data
    config ``dc`` reads: what ``pretrain --resume`` compares, so a changed corpus is never mixed into a resumed run."""
    root = Path(root)
    pair_src, mono_src = _sources(root, dc.parallel, dc.monolingual, dc.languages, dc.layout)
    files = {p for sources in pair_src.values() for source in sources for p in source[1:]}
    files |= {p for paths in mono_src.values() for p in paths}
    out = {}
    for path in sorted(files):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        out[name] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
    return out


def corpus_diff(before: dict, after: dict) -> str:
    """``parallel/general/en-de.tsv.gz changed; monolingual/x.txt added``: what differs between two identities."""
    parts = [f"{name} {'removed' if name not in after else 'added' if name not in before else 'changed'}"
             for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    return "; ".join(parts[:4]) + (f"; {len(parts) - 4} more" if len(parts) > 4 else "")


def _clean_until(rows: list, clean_fn, max_lines: int | None, seed: int, key: str, split: str):
    """Clean ``rows`` (all of them, or in a seeded random order until ``max_lines`` are kept, so a small preset
    does not pay for cleaning a whole corpus). clean_fn(row) -> filter name | (cleaned item, text to hash)."""
    order = range(len(rows))
    if max_lines is not None and max_lines < len(rows):
        order = np.random.default_rng([seed, zlib.crc32(key.encode())]).permutation(len(rows))
    counts, out = Counter(), []
    for i in order:
        res = clean_fn(rows[i])
        if isinstance(res, str):
            counts[res] += 1
        elif is_heldout(res[1]) != (split == "heldout"):
            counts["heldout" if split == "train" else "train"] += 1
        else:
            counts["kept"] += 1
            out.append(res[0])
            if max_lines is not None and len(out) >= max_lines:
                break
    return counts, out


# --------------------------------------------------------------------------------------------------- sampling
def sampling_probs(sizes: dict[str, int], alpha: float = 0.7) -> dict[str, float]:
    """p_j ∝ m_j^alpha (XLM / XLM-R): alpha < 1 up-samples small languages."""
    weights = {k: float(m) ** alpha for k, m in sizes.items() if m > 0}
    total = sum(weights.values())
    return {k: w / total for k, w in sorted(weights.items())}


def balanced_sample(corpora: Corpora, n_lines: int, alpha: float = 0.7, seed: int = 0) -> dict[str, list[str]]:
    """Texts per language for tokenizer training: n_lines in all, language j getting ~n_lines * p_j (both sides of
    pairs count for their language; a language with too few lines contributes all it has)."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for key, rows in corpora.pairs.items() if not corpora.pairs_in_mono else ():
        a, b = key.split("-")
        by_lang[a].extend(r[0] for r in rows)
        by_lang[b].extend(r[1] for r in rows)
    for lang, rows in corpora.mono.items():
        by_lang[lang].extend(rows)
    probs = sampling_probs({k: len(v) for k, v in by_lang.items()}, alpha)
    out = {}
    for lang, p in probs.items():
        rows = by_lang[lang]
        k = min(len(rows), max(1, round(n_lines * p)))
        rng = np.random.default_rng([seed, zlib.crc32(lang.encode())])
        out[lang] = [rows[i] for i in sorted(rng.choice(len(rows), size=k, replace=False))]
    return out


# --------------------------------------------------------------------------------------------------- dictionaries
def load_dictionaries(dc, root: Path, keys: list[str]) -> dict[str, dict[str, set[str]]]:
    """The token contrast's dictionaries (``dc``: the config's ``data`` section), for the pair keys. The shared
    layout: MUSE en-xx dictionaries minus every pair of MUSE's 5000-6500 *test* splits (those are evaluation data
    for lexicon induction). A synthetic world: its ``dictionaries/<a>-<b>.train.txt`` (the ``.test`` split is the
    lexicon-induction task's)."""
    if dc.layout == "synthetic":
        folder = Path(dc.dictionaries) if dc.dictionaries else root / "dictionaries"
        found = {}
        for key in keys:
            f = folder / f"{key}.train.txt"
            if f.is_file():
                table: dict[str, set[str]] = {}
                for a, b in read_dictionary(f):
                    table.setdefault(a.casefold(), set()).add(b.casefold())
                found[key] = table
        return found
    folder = Path(dc.dictionaries) if dc.dictionaries else root / "muse_dictionaries" / "full"
    test_folder = root / "muse_dictionaries" / "test_5000-6500_annotated"
    test_pairs = set()
    if test_folder.is_dir():
        for f in test_folder.glob("*.txt"):
            a, b = f.name.split(".")[0].split("-")
            for x, y in read_dictionary(f):
                test_pairs.add((x, y) if a == "en" else (y, x))
    out = {}
    for key in keys:
        f = folder / f"{key}.txt"
        if not key.startswith("en-") or not f.is_file():
            continue
        table: dict[str, set[str]] = {}
        for en, xx in read_dictionary(f):
            if (en, xx) not in test_pairs:
                table.setdefault(en.casefold(), set()).add(xx.casefold())
        out[key] = table
    return out
