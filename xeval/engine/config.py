"""Pre-training configs: a preset (``tasks/pretrain/<name>.yaml``) on top of a size
(``tasks/pretrain/sizes.yaml``), both read through ``xeval.base.shipped.tasks_root()``.

Resolution, later wins: ``sizes.yaml[size]`` -> the preset's top-level sections -> the preset's ``sizes[size]``
section -> ``--set section.key=value`` overrides. Unknown keys are a ``ConfigError`` naming the file.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from xeval.base.errors import ConfigError
from xeval.base.shipped import tasks_root
from xeval.base.textfile import read_utf8

# ``tasks/pretrain/`` of the checkout, shipped in the wheel (``xeval.base.shipped``).
PRESET_DIR = tasks_root() / "pretrain"
SECTIONS = ("model", "tokenizer", "data", "train", "objectives")


@dataclass
class TokenizerConfig:
    path: str | None = None  # an existing tokenizer directory; None: train one into the output directory
    vocab_size: int = 16000
    model: str = "unigram"  # unigram | bpe (both with byte fallback)
    sample_lines: int = 200_000  # language-balanced (alpha) sample the vocabulary is learned from
    alphabet: int = 1000  # bpe: the most single characters kept as pieces (the rest fall back to bytes); CJK
    # scripts need thousands (general-cpu: 6000)


@dataclass
class DataConfig:
    root: str | None = None  # the corpora's folder; None: $XEVAL_DATA or ../shared/data (shared layout only)
    layout: str = "shared"  # shared: ../shared/data's corpora, chosen by name below | synthetic: a synthetic world
    # (xeval synth) or any folder laid out like one: monolingual/<lang>.txt[.gz], parallel/<a>-<b>.tsv[.gz]
    # shared layout only: general (parallel/general, the general-domain pool), gettext, multi30k, wmt22
    parallel: list = field(default_factory=lambda: ["general"])
    monolingual: list = field(default_factory=lambda: ["manpages", "fortunes"])  # shared layout only
    languages: list | None = None  # keep only these (pairs en-xx with xx listed); None: all
    alpha: float = 0.7
    seq_len: int = 128  # packed monolingual rows
    pair_max_side: int = 62  # tokens per side of a pair (a concatenated pair is at most 2 * this + 4)
    mono_batch: int = 32  # global rows per step (split over processes)
    pair_batch: int = 32
    pairs_as_mono: bool = True  # each side of a pair is also monolingual text of its language (ar, ko, th ... have
    # no man pages); every preset then sees the same text, whatever its objectives
    max_lines: int | None = None  # per language / pair key, a seeded sample (small sizes start fast)
    clean: dict = field(default_factory=dict)  # CleanConfig fields
    dictionaries: str | None = None  # MUSE folder for token contrast; None: <root>/muse_dictionaries/full


@dataclass
class TrainConfig:
    steps: int = 300  # with max_seconds: the most steps
    max_seconds: float | None = None  # stop on this wall-clock budget of the training loop (set-up excluded); the
    # learning rate then decays over the budget (see train.lr_at). Such a run is not bit-reproducible: how many
    # steps fit, and the learning rate at each, depend on the machine's speed
    lr: float = 5e-4
    warmup: int = 30
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-6
    clip: float = 1.0
    loss_norm: str = "objective"  # objective: weighted sum of each objective's mean | pooled: InfoXLM's reference
    # (fairseq) -- summed losses of mlm/tlm/xlco over their summed masked tokens + sentences
    accumulate: int = 1  # batches per optimizer step (gradient accumulation): the step's batch is this many times
    # data.mono_batch / data.pair_batch, e.g. XLM-E's ~1M tokens per step on fewer devices
    bf16: bool = False  # bf16 autocast (fp32 weights)
    bf16_weights: bool = False  # with bf16: the weights themselves bf16, fp32 masters in the optimiser
    # (engine/precision.py); no faster on the CPU measured (docs/measurements.md, "Training-step speed"), so not the default
    compile: bool = False
    seed: int = 0
    threads: int | None = 1  # torch.set_num_threads; None leaves torch's default
    device: str = "auto"  # auto | cpu | cuda
    log_every: int = 10
    save_every: int = 100
    keep: int = 2  # resumable states kept
    export_every: int | None = None  # also export a loadable encoder every this many steps (and the initial weights,
    # step 0: the random-init control) into <out>/steps/step-NNNNNNN/, for curves over training
    stop_after: int | None = None  # stop (with a checkpoint) after this step: simulates an interruption


@dataclass
class PretrainConfig:
    name: str
    size: str
    model: dict
    tokenizer: TokenizerConfig
    data: DataConfig
    train: TrainConfig
    objectives: dict

    def to_dict(self) -> dict:
        return asdict(self)

    def updated(self, changes: dict, source: str = "config") -> PretrainConfig:
        """A copy with ``changes`` ({section: {key: value}}, nested dicts merged) applied and checked."""
        return PretrainConfig.from_dict(_merge(self.to_dict(), changes), source)

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> PretrainConfig:
        for section in SECTIONS:
            if not isinstance(d.get(section) or {}, dict):
                raise ConfigError(f"{source}: section {section!r} must be a mapping, found {d[section]!r:.60}")
        cfg = cls(
            name=d.get("name", "pretrain"),
            size=d.get("size", "tiny"),
            model=dict(d.get("model") or {}),
            tokenizer=_build(TokenizerConfig, d.get("tokenizer") or {}, source, "tokenizer"),
            data=_build(DataConfig, d.get("data") or {}, source, "data"),
            train=_build(TrainConfig, d.get("train") or {}, source, "train"),
            objectives=trained_objectives(d.get("objectives") or {}, source),
        )
        _check_values(cfg, source)
        return cfg


MIN_VOCAB = 361  # 4 specials + 256 byte pieces + <mask> + at least 100 learned pieces (engine/tokenizer.py)


def _check_values(cfg: PretrainConfig, source: str) -> None:
    """Values that would fail deep inside training (or train nothing) are a ConfigError naming the key."""
    tc, dc, kc = cfg.train, cfg.data, cfg.tokenizer

    def need(ok: bool, key: str, value, what: str) -> None:
        if not ok:
            raise ConfigError(f"{source}: {key} must be {what}, found {value!r}")

    def number(value) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

    need(isinstance(tc.steps, int) and tc.steps >= 0, "train.steps", tc.steps, "an integer >= 0")
    need(number(tc.lr) and tc.lr > 0, "train.lr", tc.lr, "a finite number > 0")
    need(tc.max_seconds is None or (number(tc.max_seconds) and tc.max_seconds > 0), "train.max_seconds",
         tc.max_seconds, "a finite number of seconds > 0")
    for key in ("warmup", "seed"):
        need(isinstance(getattr(tc, key), int) and getattr(tc, key) >= 0, f"train.{key}", getattr(tc, key),
             "an integer >= 0")
    for key in ("log_every", "save_every", "keep"):
        need(isinstance(getattr(tc, key), int) and getattr(tc, key) >= 1, f"train.{key}", getattr(tc, key),
             "an integer >= 1")
    need(tc.export_every is None or (isinstance(tc.export_every, int) and not isinstance(tc.export_every, bool)
                                     and tc.export_every >= 1), "train.export_every", tc.export_every,
         "an integer >= 1 or null")
    need(tc.threads is None or (isinstance(tc.threads, int) and tc.threads >= 1), "train.threads", tc.threads,
         "an integer >= 1 or null")
    need(not tc.bf16_weights or tc.bf16, "train.bf16_weights", tc.bf16_weights, "false unless train.bf16 is true")
    need(isinstance(kc.vocab_size, int) and kc.vocab_size >= MIN_VOCAB, "tokenizer.vocab_size", kc.vocab_size,
         f"an integer >= {MIN_VOCAB} (specials, 256 byte pieces and at least 100 learned pieces)")
    need(isinstance(kc.sample_lines, int) and kc.sample_lines >= 1, "tokenizer.sample_lines", kc.sample_lines,
         "an integer >= 1")
    for key in ("seq_len", "pair_max_side", "mono_batch", "pair_batch"):
        need(isinstance(getattr(dc, key), int) and getattr(dc, key) >= 1, f"data.{key}", getattr(dc, key),
             "an integer >= 1")
    need(number(dc.alpha) and dc.alpha >= 0, "data.alpha", dc.alpha, "a finite number >= 0")


def trained_objectives(objectives: dict, source: str = "config") -> dict:
    """The objectives a run trains: ``null`` (``--set objectives.tlm=null``) or ``weight: 0`` removes one, so an
    ablation "without X" never trains X. Each value is a mapping of that objective's options."""
    if not isinstance(objectives, dict):
        raise ConfigError(f"{source}: objectives must be a mapping of name -> options, got {objectives!r}")
    out = {}
    for name, opts in objectives.items():
        if opts is None:
            continue
        if not isinstance(opts, dict):
            raise ConfigError(f"{source}: objectives.{name} must be a mapping of options or null, got {opts!r}")
        try:
            weight = float(opts.get("weight", 1.0))
        except (TypeError, ValueError):
            raise ConfigError(f"{source}: objectives.{name}.weight must be a number, got {opts['weight']!r}") from None
        if weight != 0.0:
            out[name] = dict(opts)
    return out


def _build(cls, values: dict, source: str, section: str):
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown} in section {section!r}; expected some of {sorted(names)}")
    types = {f.name: str(f.type) for f in fields(cls)}
    out = {}
    for k, v in values.items():
        if isinstance(v, str) and types[k].split(" ")[0] in ("float", "int"):
            try:  # YAML 1.1 reads "2e-3" (no dot) as a string
                v = float(v) if types[k].startswith("float") else int(v)
            except ValueError:
                raise ConfigError(f"{source}: {section}.{k} must be a number, got {v!r}") from None
        out[k] = v
    return cls(**out)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(read_utf8(path, "YAML"))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML ({getattr(err, 'problem', err)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def resolve_path(spec: str) -> Path:
    """A preset name (``mlm``) or a path to a YAML file."""
    path = Path(spec)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        return path
    candidate = PRESET_DIR / f"{spec}.yaml"
    if not candidate.is_file():
        names = sorted(p.stem for p in PRESET_DIR.glob("*.yaml") if p.stem != "sizes")
        raise ConfigError(f"unknown pre-training preset {spec!r}; expected a YAML path or one of {names}")
    return candidate


def load_config(spec: str, size: str | None = None, overrides: list[str] | None = None) -> PretrainConfig:
    path = resolve_path(spec)
    preset = _read_yaml(path)
    unknown = sorted(set(preset) - set(SECTIONS) - {"name", "size", "sizes", "description"})
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key(s) {unknown}")
    size = size or preset.get("size", "tiny")
    sizes_file = path.parent / "sizes.yaml"
    shared = _read_yaml(sizes_file) if sizes_file.is_file() else {}
    own = preset.get("sizes") or {}
    if size not in shared and size not in own:
        raise ConfigError(f"{path}: unknown size {size!r}; expected one of {sorted(set(shared) | set(own))}")
    merged = _merge(shared.get(size, {}), {k: preset[k] for k in SECTIONS if k in preset})
    merged = _merge(merged, own.get(size, {}))
    merged["name"], merged["size"] = preset.get("name", path.stem), size
    for item in overrides or []:
        merged = _merge(merged, parse_override(item))
    return PretrainConfig.from_dict(merged, str(path))


def parse_override(item: str) -> dict:
    """``train.lr=1e-3`` -> {"train": {"lr": 0.001}} (the value is parsed as YAML)."""
    if "=" not in item or "." not in item.split("=", 1)[0]:
        raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. train.steps=100")
    key, value = item.split("=", 1)
    if key.split(".")[0] not in SECTIONS:
        raise ConfigError(f"--set {item!r}: unknown section {key.split('.')[0]!r}; expected one of {', '.join(SECTIONS)}")
    out: dict = {}
    node = out
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = yaml.safe_load(value)
    return out


def config_diff(before: dict, after: dict, prefix: str = "") -> str:
    """``train.lr 0.0005 -> 0.001; tokenizer.vocab_size 2000 -> 4000``: what differs between two config dicts."""
    parts = []
    for key in sorted(set(before) | set(after), key=str):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            inner = config_diff(a, b, f"{prefix}{key}.")
            parts += [inner] if inner else []
        elif a != b:
            parts.append(f"{prefix}{key} {a!r} -> {b!r}")
    return "; ".join(parts)
