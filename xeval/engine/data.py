"""Pre-training data: which corpora, how they are cleaned, how languages are sampled, how batches are built.

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

Cleaning (on by default, counted per language in the run log; a first measurement found placeholders in 27-37 % of
gettext pairs, usually identical on both sides, which contrastive objectives learn to match): strip printf/format
placeholders and menu accelerators, drop ISO code-name catalogs (``iso_*``), pairs
whose sides are identical or near-identical and very short pairs; for monolingual text drop man-page headers,
short lines (option lists, table rows) and lines that are mostly not letters.

Language sampling: p_j ∝ m_j^alpha (alpha = 0.7), m_j = number of lines (pairs) of language j after cleaning.

Determinism: every random choice comes from a numpy ``Generator`` whose state is JSON (saved in checkpoints),
each language's line order is a permutation derived from (seed, language, epoch), and a stream's position is a
few integers per language, so ``--resume`` continues with exactly the batches an uninterrupted run would see.
A fixed 1 % of lines (by a hash of the text) is held out of training (``split="heldout"``) for in-domain probes.
"""

from __future__ import annotations

import difflib
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from xeval.base.errors import ConfigError

# --------------------------------------------------------------------------------------------------- readers
# Developer A's readers (xeval/data/corpora.py) are used when present; the fallbacks below read the same formats.
try:  # pragma: no cover - depends on which modules exist in the checkout
    from xeval.data.corpora import iter_line_aligned, iter_monolingual, iter_parallel_tsv
except ImportError:  # pragma: no cover
    iter_parallel_tsv = iter_line_aligned = iter_monolingual = None
try:  # pragma: no cover
    from xeval.data.dictionaries import read_dictionary
except ImportError:  # pragma: no cover
    read_dictionary = None


def read_dictionary_pairs(path: Path) -> list[tuple[str, str]]:
    """MUSE dictionary: (source word, target word) per line, space or tab separated."""
    if read_dictionary is not None:
        return list(read_dictionary(path))
    out = []
    for line in _lines(Path(path)):
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) == 2:
            out.append((fields[0], fields[1]))
    return out


def _lines(path: Path) -> Iterator[str]:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        for line in handle:
            yield line.rstrip("\r\n")


def read_pairs_tsv(path: Path) -> Iterator[tuple[str, str, str]]:
    """gettext ``en-xx.tsv.gz``: (msgid, msgstr, catalog); the '#' header line is skipped."""
    if iter_parallel_tsv is not None:
        for item in iter_parallel_tsv(path):
            yield _as_triple(item)
        return
    for i, line in enumerate(_lines(path)):
        if i == 0 and line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) >= 2:
            yield cols[0], cols[1], cols[2] if len(cols) > 2 else ""


def read_line_aligned(a: Path, b: Path) -> Iterator[tuple[str, str, str]]:
    if iter_line_aligned is not None:
        for item in iter_line_aligned(a, b):
            yield _as_triple(item)
        return
    for x, y in zip(_lines(a), _lines(b), strict=False):
        yield x, y, ""


def read_monolingual(path: Path) -> Iterator[str]:
    if iter_monolingual is not None:
        for item in iter_monolingual(path):
            yield item if isinstance(item, str) else (item[-1] if isinstance(item, tuple) else str(item))
        return
    yield from _lines(path)


def _as_triple(item) -> tuple[str, str, str]:
    if isinstance(item, (tuple, list)):
        return str(item[0]), str(item[1]), str(item[2]) if len(item) > 2 else ""
    src, tgt = getattr(item, "src", None), getattr(item, "tgt", None)
    return str(src), str(tgt), str(getattr(item, "domain", "") or getattr(item, "source", ""))


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


# --------------------------------------------------------------------------------------------------- cleaning
PLACEHOLDER = re.compile(
    r"%(?:\d+\$)?[-+ 0#']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|L|q|j|z|t|I64|I32)?[diouxXeEfFgGaAcCsSpn]"
    r"|%\([A-Za-z_]\w*\)[-+ 0#]*\d*(?:\.\d+)?[sdifrxX]"  # Python %(name)s
    r"|%%"
    r"|\{\d*(?::[^{}]*)?\}|\{[A-Za-z_][\w.]*(?::[^{}]*)?\}"  # {0} {} {name} {0:>3}
    r"|\$\{\w+\}|\$\w+"  # ${var} $var
    r"|%[A-Za-z_]+%"  # %NAME%
)
ACCEL_PAREN = re.compile(r"\s*[(（][_&~][^\W_][)）]")  # "文件(_F)", "ファイル(&F)"
ACCEL = re.compile(r"(?<![\w&])[_&~](?=[^\W\d_])(?![A-Za-z]+;)")  # "_File", "&Open", not "&amp;"
SPACES = re.compile(r"\s+")


EMPTY_QUOTES = re.compile(r"""(['"«“„‘‚「『]) *(['"»”“’‘」』])|\( *\)|\[ *\]""")  # left by a removed placeholder
NON_LETTERS = re.compile(r"[\W\d_]+")


def strip_markup(text: str) -> str:
    text = PLACEHOLDER.sub(" ", text)
    text = ACCEL_PAREN.sub("", text)
    text = ACCEL.sub("", text)
    text = EMPTY_QUOTES.sub(" ", text)
    return SPACES.sub(" ", text).strip(" \t:;,-|/")


def _letters(text: str) -> str:
    return NON_LETTERS.sub("", text.casefold())


@dataclass
class CleanConfig:
    enabled: bool = True
    min_letters: int = 3  # each side of a pair needs this many letters
    min_words_en: int = 2  # the English side of a pair needs this many words with a letter
    near_identical: float = 0.8  # drop pairs whose letter strings are this similar (difflib ratio)
    mono_min_chars: int = 20
    mono_min_letter_share: float = 0.5
    drop_catalogs: tuple[str, ...] = ("iso_",)  # gettext catalog domains to drop (prefixes)


def clean_pair(src: str, tgt: str, domain: str, cfg: CleanConfig) -> tuple[str, str] | str:
    """The cleaned pair, or the name of the filter that dropped it."""
    if not cfg.enabled:
        return (src, tgt) if src.strip() and tgt.strip() else "empty"
    if domain and any(domain.startswith(p) for p in cfg.drop_catalogs):
        return "iso_catalog"
    a, b = strip_markup(src), strip_markup(tgt)
    la, lb = _letters(a), _letters(b)
    if len(la) < cfg.min_letters or len(lb) < cfg.min_letters:
        return "short"
    if sum(1 for w in a.split() if any(c.isalpha() for c in w)) < cfg.min_words_en:
        return "short"
    if la == lb:
        return "identical"
    if _near_identical(la, lb, cfg.near_identical):
        return "near_identical"
    return a, b


def _near_identical(a: str, b: str, threshold: float) -> bool:
    """difflib's ratio >= threshold, with cheap rejections first (different scripts share almost no letters)."""
    if 2 * min(len(a), len(b)) / (len(a) + len(b)) < threshold:
        return False
    sa, sb = set(a), set(b)
    if len(sa & sb) < 0.5 * len(sa | sb):
        return False
    if len(a) + len(b) > 160:  # long sides: compare bags of 3-grams instead of aligning characters (fast)
        ga = Counter(a[i : i + 3] for i in range(len(a) - 2))
        gb = Counter(b[i : i + 3] for i in range(len(b) - 2))
        return 2 * sum((ga & gb).values()) / max(sum(ga.values()) + sum(gb.values()), 1) >= threshold
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return m.quick_ratio() >= threshold and m.ratio() >= threshold


def clean_mono(line: str, cfg: CleanConfig) -> str:
    """The cleaned line, or "\\0<filter name>" when a filter drops it."""
    text = line.replace("\\n", " ").replace("\\t", " ")
    text = SPACES.sub(" ", text).strip()
    if not cfg.enabled:
        return text if text else "\0empty"
    if text.startswith("### "):
        return "\0header"
    if len(text) < cfg.mono_min_chars:
        return "\0short"
    letters = len(NON_LETTERS.sub("", text))
    if letters < cfg.mono_min_letter_share * (len(text) - text.count(" ")):
        return "\0non_letters"
    return text


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
    if layout == "shared":
        pair_src, mono_src = discover(root, parallel, monolingual)
    else:
        pair_src, mono_src = discover_synthetic(root)
    keep = set(languages) if languages else None
    report: dict[str, dict[str, Counter]] = {"pairs": {}, "mono": {}}
    pairs: dict[str, list[tuple[str, str]]] = {}
    for key, sources in sorted(pair_src.items()):
        if keep is not None and not set(key.split("-")) <= keep | {"en"}:
            continue
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
        if keep is not None and lang not in keep:
            continue
        rows = [line for path in paths for line in read_monolingual(path)]

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


# --------------------------------------------------------------------------------------------------- streams
class _Cursor:
    """Walks one language's lines in a permutation fixed by (seed, key, epoch); state = (epoch, pos)."""

    def __init__(self, n: int, seed: int, key: str, epoch: int = 0, pos: int = 0):
        self.n, self.seed, self.key, self.epoch, self.pos = n, seed, key, epoch, pos
        self._perm = self._permutation()

    def _permutation(self) -> np.ndarray:
        return np.random.default_rng([self.seed, zlib.crc32(self.key.encode()), self.epoch]).permutation(self.n)

    def next(self) -> int:
        if self.pos >= self.n:
            self.epoch, self.pos = self.epoch + 1, 0
            self._perm = self._permutation()
        i = int(self._perm[self.pos])
        self.pos += 1
        return i


class MonoStream:
    """Packed monolingual sequences: each row ``<s> line </s> line </s> ... </s>`` of exactly ``seq_len`` ids from
    one language drawn with p_j ∝ m_j^alpha; a line that does not fit continues in that language's next row."""

    def __init__(self, texts: dict[str, list[str]], tokenizer, seq_len: int, alpha: float = 0.7, seed: int = 0):
        self.texts, self.tok, self.seq_len, self.seed = texts, tokenizer, seq_len, seed
        self.probs = sampling_probs({k: len(v) for k, v in texts.items()}, alpha)
        self.langs = list(self.probs)
        self.p = np.array([self.probs[k] for k in self.langs])
        self.rng = np.random.default_rng(seed)
        self.cursors = {k: _Cursor(len(texts[k]), seed, "mono:" + k) for k in self.langs}
        self.offset = dict.fromkeys(self.langs, 0)  # tokens of the current line already used
        self.current = dict.fromkeys(self.langs, -1)  # index of the current line (-1: none)
        self.bos, self.eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")

    def _line_ids(self, lang: str, index: int) -> list[int]:
        return self.tok.encode(self.texts[lang][index], add_special_tokens=False).ids + [self.eos]

    def _row(self, lang: str) -> list[int]:
        need, out = self.seq_len - 2, []
        while len(out) < need:
            if self.current[lang] < 0:
                self.current[lang], self.offset[lang] = self.cursors[lang].next(), 0
            full = self._line_ids(lang, self.current[lang])
            take = full[self.offset[lang] : self.offset[lang] + need - len(out)]
            out += take
            self.offset[lang] += len(take)
            if self.offset[lang] >= len(full):
                self.current[lang] = -1
        return [self.bos] + out + [self.eos]

    def next_batch(self, batch_size: int) -> tuple[torch.Tensor, list[str]]:
        """(B, T) ids and the language of each row."""
        langs = [self.langs[i] for i in self.rng.choice(len(self.langs), size=batch_size, p=self.p)]
        rows = [self._row(lang) for lang in langs]
        return torch.tensor(rows, dtype=torch.long), langs

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.bit_generator.state,
            "cursors": {k: [c.epoch, c.pos] for k, c in self.cursors.items()},
            "current": dict(self.current),
            "offset": dict(self.offset),
        }

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for k, (epoch, pos) in state["cursors"].items():
            self.cursors[k] = _Cursor(len(self.texts[k]), self.seed, "mono:" + k, epoch, pos)
        self.current.update(state["current"])
        self.offset.update(state["offset"])


@dataclass
class PairBatch:
    src: list[list[int]]  # token ids without specials
    tgt: list[list[int]]
    keys: list[str]  # "en-de" ...
    swapped: list[bool]  # True when src is the key's second language
    texts: list[tuple[str, str]]  # (src text, tgt text), in src/tgt order


class PairStream:
    """Translation pairs: key j drawn with p_j ∝ m_j^alpha, direction flipped with probability 1/2, each side
    truncated to ``max_side`` tokens."""

    def __init__(self, pairs: dict[str, list[tuple[str, str]]], tokenizer, max_side: int, alpha=0.7, seed=0):
        self.pairs, self.tok, self.max_side, self.seed = pairs, tokenizer, max_side, seed
        self.probs = sampling_probs({k: len(v) for k, v in pairs.items()}, alpha)
        self.keys = list(self.probs)
        self.p = np.array([self.probs[k] for k in self.keys])
        self.rng = np.random.default_rng([seed, 1])
        self.cursors = {k: _Cursor(len(pairs[k]), seed, "pairs:" + k) for k in self.keys}

    def next_batch(self, batch_size: int) -> PairBatch:
        keys = [self.keys[i] for i in self.rng.choice(len(self.keys), size=batch_size, p=self.p)]
        flips = self.rng.random(batch_size) < 0.5
        texts = []
        for key, flip in zip(keys, flips):
            a, b = self.pairs[key][self.cursors[key].next()]
            texts.append((b, a) if flip else (a, b))
        enc_a = self.tok.encode_batch([t[0] for t in texts], add_special_tokens=False)
        enc_b = self.tok.encode_batch([t[1] for t in texts], add_special_tokens=False)
        return PairBatch(
            [e.ids[: self.max_side] for e in enc_a], [e.ids[: self.max_side] for e in enc_b],
            keys, [bool(f) for f in flips], texts,
        )  # fmt: skip

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "cursors": {k: [c.epoch, c.pos] for k, c in self.cursors.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for k, (epoch, pos) in state["cursors"].items():
            self.cursors[k] = _Cursor(len(self.pairs[k]), self.seed, "pairs:" + k, epoch, pos)


def pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest row: ids (B, T) and attention mask (B, T)."""
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask
