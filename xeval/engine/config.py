"""Pre-training configs: a preset (``tasks/pretrain/<name>.yaml``) on top of a size
(``tasks/pretrain/sizes.yaml``), both read through ``xeval.base.shipped.tasks_root()``.

Resolution, later wins: ``sizes.yaml[size]`` -> the preset's top-level sections -> the preset's ``sizes[size]``
section -> ``--set section.key=value`` overrides. Unknown keys are a ``ConfigError`` naming the file. A config file
of your own, outside the presets folder, gets its sizes from the shipped ``sizes.yaml`` (and from a ``sizes.yaml``
beside it, which wins).

Nothing is taken on trust: YAML is read by ``xeval.base.strict_yaml`` (a key twice is an error, ``010`` is ten,
``1e3`` and ``5e-4`` are numbers alike), and every numeric option has a type and a range, checked before anything is
read or written: integers are integers (``true`` is not one; ``1e3`` is accepted where it is exactly 1000), objective
weights are >= 0, masking probabilities lie in (0, 1], dropouts in [0, 1), and so on (``_check_values``,
``OBJECTIVE_OPTIONS``, ``MODEL_OPTIONS``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from xeval.base import strict_yaml
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
    pair_buckets: int = 1  # VECO 2.0's contrasts (seqcl, tokcl on separate sides; not TLM, XLCO or tokcl concat):
    # encode a step's pair sides in this many groups of similar length, each padded to its
    # own longest row instead of all to the batch's longest (same maths: padding is masked; fewer padded tokens
    # when sides vary in length; dropout draws differ from 1 group, so numbers move within seed noise)
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
    # who draws dropout masks (engine/dropout.py): "torch" (Bernoulli; every committed pre-training report) or
    # "sfc64" (numpy's SFC64 against p: the same dropout, other masks, cheaper on a CPU)
    dropout_rng: str = "torch"
    seed: int = 0
    threads: int | None = 1  # torch.set_num_threads; None leaves torch's default
    device: str = "auto"  # auto | cpu | cuda
    log_every: int = 10
    save_every: int = 100
    keep: int = 2  # resumable states kept
    export_every: int | None = None  # also export a loadable encoder every this many steps (and the initial weights,
    # step 0: the random-init control) into <out>/steps/step-NNNNNNN/, for curves over training
    stop_after: int | None = None  # stop (with a checkpoint) after this step: simulates an interruption
    # the first this many steps train the objectives' heads only, the encoder frozen: continuing a folder that has no
    # MLM head (a sentence-transformers model), the encoder's first updates would come through a random head. Part of
    # train.steps; they run at head_warmup_lr (default train.lr), constant, and the schedule (warmup, then decay)
    # runs over the steps after them, so the encoder gets its own warm-up. Single-process only (DDP reduces a fixed
    # set of gradients).
    head_warmup: int = 0
    head_warmup_lr: float | None = None  # a random head learns at a rate far above continued pre-training's


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


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# a range as the message says it -> (low, high, low excluded, high excluded); None: unbounded on that side
_RANGES = {
    ">= 0": (0, None, False, False), "> 0": (0, None, True, False), ">= 1": (1, None, False, False),
    "in (0, 1]": (0, 1, True, False), "in [0, 1]": (0, 1, False, False), "in [0, 1)": (0, 1, False, True),
}
OBJECTIVE_OPTIONS = {  # objectives.<name>.<option>: (kind, range); the objectives read them in engine/objectives/
    "weight": ("float", ">= 0"), "mask_prob": ("float", "in (0, 1]"), "mask_frac": ("float", "in [0, 1]"),
    "random_frac": ("float", "in [0, 1]"), "disc_weight": ("float", ">= 0"), "temperature": ("float", "> 0"),
    "momentum": ("float", "in [0, 1]"), "queue_size": ("int", ">= 1"), "max_links": ("int", ">= 1"),
    "enable_step": ("int", ">= 0"), "generator_layers": ("int", ">= 1"), "generator_ffn": ("int", ">= 1"),
    "position_reset": ("bool", None), "concat": ("bool", None), "synonyms": ("bool", None), "mixup": ("bool", None),
    "projection": ("bool", None),
}
OBJECTIVE_CHOICES = {  # objectives.<name>.<option>: the names the objectives understand (engine/objectives/base.pool)
    "pooling": ("cls", "mean"),
}
MODEL_OPTIONS = {  # model.<key> of engine/model.py's XevalConfig
    "vocab_size": ("int", ">= 1"), "hidden_size": ("int", ">= 1"), "num_hidden_layers": ("int", ">= 1"),
    "num_attention_heads": ("int", ">= 1"), "intermediate_size": ("int", ">= 1"),
    "max_position_embeddings": ("int", ">= 1"), "relative_buckets": ("int", ">= 1"),
    "relative_max_distance": ("int", ">= 1"), "hidden_dropout_prob": ("float", "in [0, 1)"),
    "attention_probs_dropout_prob": ("float", "in [0, 1)"), "layer_norm_eps": ("float", "> 0"),
    "initializer_range": ("float", "> 0"), "pre_norm": ("bool", None), "bias": ("bool", None),
    "tie_word_embeddings": ("bool", None), "language_embeddings": ("bool", None),
}
CLEAN_OPTIONS = {  # data.clean.<key> of engine/cleaning.py's CleanConfig (drop_catalogs: a list of prefixes)
    "enabled": ("bool", None), "min_letters": ("int", ">= 0"), "min_words_en": ("int", ">= 0"),
    "near_identical": ("float", "in [0, 1]"), "mono_min_chars": ("int", ">= 0"),
    "mono_min_letter_share": ("float", "in [0, 1]"),
}


def typed(value, kind: str, key: str, source: str):
    """``value`` as an option of ``kind`` ("int", "float", "bool"), or a ConfigError naming ``key``. Integers
    accept an exact float (``1e3`` -> 1000, never 16.9 -> 16) or such text; a bool is no number."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: {key} must be true or false, found {value!r:.60}")
        return value
    if isinstance(value, str):  # --set values and strings of older YAML readers
        try:
            value = float(value) if kind == "float" or not value.strip().lstrip("+-").isdigit() else int(value)
        except ValueError:
            raise ConfigError(f"{source}: {key} must be a number, got {value!r}") from None
    if not _number(value):
        raise ConfigError(f"{source}: {key} must be {'an integer' if kind == 'int' else 'a number'}, found {value!r:.60}")
    if kind == "int":
        if float(value) != int(value):
            raise ConfigError(f"{source}: {key} must be an integer, found {value!r}")
        return int(value)
    return float(value)


def _check_range(value, kind: str, bounds: str | None, key: str, source: str):
    value = typed(value, kind, key, source)
    if bounds is not None:
        low, high, open_low, open_high = _RANGES[bounds]
        ok = (low is None or (value > low if open_low else value >= low)) and \
             (high is None or (value < high if open_high else value <= high))
        if not ok:
            what = {"int": "an integer", "float": "a number"}[kind]
            raise ConfigError(f"{source}: {key} must be {what} {bounds}, found {value!r}")
    return value


def _check_values(cfg: PretrainConfig, source: str) -> None:
    """Values that would fail deep inside training (or train nothing, or the wrong thing) are a ConfigError naming
    the key."""
    tc, dc, kc = cfg.train, cfg.data, cfg.tokenizer

    def need(ok: bool, key: str, value, what: str) -> None:
        if not ok:
            raise ConfigError(f"{source}: {key} must be {what}, found {value!r}")

    need(_integer(tc.steps) and tc.steps >= 0, "train.steps", tc.steps, "an integer >= 0")
    need(_number(tc.lr) and tc.lr > 0, "train.lr", tc.lr, "a finite number > 0")
    need(tc.max_seconds is None or (_number(tc.max_seconds) and tc.max_seconds > 0), "train.max_seconds",
         tc.max_seconds, "a finite number of seconds > 0")
    for key in ("warmup", "seed"):
        need(_integer(getattr(tc, key)) and getattr(tc, key) >= 0, f"train.{key}", getattr(tc, key), "an integer >= 0")
    for key in ("log_every", "save_every", "keep", "accumulate"):
        need(_integer(getattr(tc, key)) and getattr(tc, key) >= 1, f"train.{key}", getattr(tc, key), "an integer >= 1")
    need(_integer(tc.head_warmup) and 0 <= tc.head_warmup and (tc.head_warmup == 0 or tc.head_warmup < tc.steps),
         "train.head_warmup", tc.head_warmup, f"an integer >= 0 and below train.steps ({tc.steps})")
    need(tc.head_warmup_lr is None or (_number(tc.head_warmup_lr) and tc.head_warmup_lr > 0), "train.head_warmup_lr",
         tc.head_warmup_lr, "a finite number > 0 or null")
    for key, low in (("export_every", 1), ("stop_after", 0), ("threads", 1)):
        value = getattr(tc, key)
        need(value is None or (_integer(value) and value >= low), f"train.{key}", value, f"an integer >= {low} or null")
    for key in ("weight_decay", "clip"):
        need(_number(getattr(tc, key)) and getattr(tc, key) >= 0, f"train.{key}", getattr(tc, key),
             "a finite number >= 0")
    for key in ("beta1", "beta2"):
        need(_number(getattr(tc, key)) and 0 <= getattr(tc, key) < 1, f"train.{key}", getattr(tc, key),
             "a number in [0, 1)")
    need(_number(tc.eps) and tc.eps > 0, "train.eps", tc.eps, "a finite number > 0")
    for key in ("bf16", "bf16_weights", "compile"):
        need(isinstance(getattr(tc, key), bool), f"train.{key}", getattr(tc, key), "true or false")
    need(tc.dropout_rng in {"torch", "sfc64"}, "train.dropout_rng", tc.dropout_rng, "'torch' or 'sfc64'")
    need(not tc.bf16_weights or tc.bf16, "train.bf16_weights", tc.bf16_weights, "false unless train.bf16 is true")
    need(_integer(kc.vocab_size) and kc.vocab_size >= MIN_VOCAB, "tokenizer.vocab_size", kc.vocab_size,
         f"an integer >= {MIN_VOCAB} (specials, 256 byte pieces and at least 100 learned pieces)")
    for key in ("sample_lines", "alphabet"):
        need(_integer(getattr(kc, key)) and getattr(kc, key) >= 1, f"tokenizer.{key}", getattr(kc, key),
             "an integer >= 1")
    for key in ("seq_len", "pair_max_side", "mono_batch", "pair_batch", "pair_buckets"):
        need(_integer(getattr(dc, key)) and getattr(dc, key) >= 1, f"data.{key}", getattr(dc, key), "an integer >= 1")
    need(dc.max_lines is None or (_integer(dc.max_lines) and dc.max_lines >= 1), "data.max_lines", dc.max_lines,
         "an integer >= 1 or null")
    need(_number(dc.alpha) and dc.alpha >= 0, "data.alpha", dc.alpha, "a finite number >= 0")
    need(isinstance(dc.pairs_as_mono, bool), "data.pairs_as_mono", dc.pairs_as_mono, "true or false")
    if not isinstance(dc.clean, dict):
        raise ConfigError(f"{source}: data.clean must be a mapping of cleaning options, found {dc.clean!r:.60}")
    unknown = sorted(set(dc.clean) - set(CLEAN_OPTIONS) - {"drop_catalogs"})
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown} in data.clean; expected some of "
                          f"{sorted([*CLEAN_OPTIONS, 'drop_catalogs'])}")
    for key, value in dc.clean.items():
        if key in CLEAN_OPTIONS:
            dc.clean[key] = _check_range(value, *CLEAN_OPTIONS[key], f"data.clean.{key}", source)
    init = cfg.model.get("init")
    need(init is None or (isinstance(init, str) and init.strip() != ""), "model.init", init,
         "a folder (a Hugging Face BERT / XLM-R model to continue from) or null")
    for key, value in cfg.model.items():
        if key in MODEL_OPTIONS and value is not None:
            cfg.model[key] = _check_range(value, *MODEL_OPTIONS[key], f"model.{key}", source)
    for name, opts in cfg.objectives.items():
        for key, value in opts.items():
            if key in OBJECTIVE_OPTIONS:
                opts[key] = _check_range(value, *OBJECTIVE_OPTIONS[key], f"objectives.{name}.{key}", source)
            elif key in OBJECTIVE_CHOICES:
                need(value in OBJECTIVE_CHOICES[key], f"objectives.{name}.{key}", value,
                     " or ".join(OBJECTIVE_CHOICES[key]))
        if float(opts.get("mask_frac", 0)) + float(opts.get("random_frac", 0)) > 1:
            raise ConfigError(f"{source}: objectives.{name}.mask_frac + random_frac must be <= 1 (the rest of the "
                              f"masked positions keep their token), found {opts.get('mask_frac')} + "
                              f"{opts.get('random_frac')}")


def trained_objectives(objectives: dict, source: str = "config") -> dict:
    """The objectives a run trains: ``null`` (``--set objectives.tlm=null``) or ``weight: 0`` removes one, so an
    ablation "without X" never trains X. Each value is a mapping of that objective's options; a weight is a number
    >= 0 (a negative one would maximise the loss)."""
    if not isinstance(objectives, dict):
        raise ConfigError(f"{source}: objectives must be a mapping of name -> options, got {objectives!r}")
    out = {}
    for name, opts in objectives.items():
        if opts is None:
            continue
        if not isinstance(opts, dict):
            raise ConfigError(f"{source}: objectives.{name} must be a mapping of options or null, got {opts!r}")
        weight = _check_range(opts.get("weight", 1.0), "float", ">= 0", f"objectives.{name}.weight", source)
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
        kind = types[k].split(" ")[0]
        if v is not None and kind in ("float", "int", "bool"):
            v = typed(v, kind, f"{section}.{k}", source)  # 1e3 -> 1000 for an integer, true never a number
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
        data = strict_yaml.load(read_utf8(path, "YAML"))
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
    # the shipped sizes, then a sizes.yaml beside the file (a config of your own outside the presets folder)
    shared = _read_yaml(PRESET_DIR / "sizes.yaml") if (PRESET_DIR / "sizes.yaml").is_file() else {}
    beside = path.parent / "sizes.yaml"
    if beside.is_file() and beside.resolve() != (PRESET_DIR / "sizes.yaml").resolve():
        shared = {**shared, **_read_yaml(beside)}
    own = preset.get("sizes") or {}
    if not isinstance(own, dict):
        raise ConfigError(f"{path}: 'sizes' must map size names to sections, found {own!r:.60}")
    if size not in shared and size not in own:
        raise ConfigError(f"{path}: unknown size {size!r}; expected one of {sorted(set(shared) | set(own))} (the "
                          f"shipped {PRESET_DIR / 'sizes.yaml'}, a sizes.yaml beside the file, or the file's own "
                          "'sizes:' section)")
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
    try:
        node[parts[-1]] = strict_yaml.load(value)
    except yaml.YAMLError as err:
        raise ConfigError(f"--set {item!r}: the value is not valid YAML ({getattr(err, 'problem', err)})") from None
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
