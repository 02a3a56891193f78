"""Continued pre-training from a pretrained encoder: ``model.init: DIR`` (``xeval pretrain --init DIR``).

InfoXLM and VECO start from XLM-R's weights rather than from random ones. ``DIR`` is a Hugging Face folder of a
BERT or RoBERTa / XLM-R encoder (``config.json`` + safetensors weights + ``tokenizer.json``), or a
sentence-transformers folder (``modules.json``; the Transformer module in the root or in ``0_Transformer/``). The
engine model then takes the init model's shape, its exact weights and its tokenizer:

- the shape (layers, width, heads, FFN width, activation, LayerNorm epsilon, positions, vocabulary rows) replaces
  the preset's ``model`` keys, each replaced value named in the run log (a size such as ``micro`` sets a shape of
  its own; the init model's wins). Options that would change the architecture itself (``pre_norm``, ``bias:
  false``, ``position_embedding: none``, XLM's language embeddings) are a ConfigError: the model would no longer
  compute what the init model computes. A relative position bias (XLM-E's gated one, or the plain one) is the
  exception: it is added to the attention logits beside the absolute positions, as in XLM-E, and its bias table
  starts at zero, so the model starts as the init model and the bias is learnt from there (the gates, which
  multiply the bias, keep their seeded initialisation);
- the weights map one to one, with two folds that leave every hidden state as it was: BERT and RoBERTa add the
  token-type-0 embedding to every token (callers pass no token types), a constant that is folded into the
  position table; RoBERTa / XLM-R number positions from ``padding_idx + 1`` (rows 0 .. padding_idx are never
  used by a token that is not padding), so the engine's positions 0..T-1 are that table's rows from
  ``padding_idx + 1`` on. Separate q / k / v projections become the engine's fused ``qkv`` (rows [q; k; v]).
  A pooler is dropped (no part of the hidden states);
- the tokenizer files are copied into the run folder unchanged (no tokenizer is trained); the engine's objectives
  need XLM-R's special tokens (``<s> <pad> </s> <unk> <mask>``), so a WordPiece ``[CLS]`` vocabulary is refused;
- an MLM head found beside the encoder (``cls.predictions.*`` of BertForMaskedLM, ``lm_head.*`` of
  XLMRobertaForMaskedLM) initialises the engine's; otherwise (sentence-transformers exports have none) the head
  keeps its initialisation from ``train.seed``, and the run log says so.

The step-0 checkpoint of such a run (``train.steps: 0``, or step 0 of ``train.export_every``) is the init model
itself: the control a continued run is measured against. ``xeval_pretrain.json`` records the folder and the
SHA-256 of its weight files (``InitModel.provenance``).

Weights are read with safetensors only: a folder with only ``pytorch_model.bin`` (pickle) is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open

from xeval.base.errors import ConfigError, UserError
from xeval.base.safe_files import check_safetensors
from xeval.base.st_pooling import pooling_config, pooling_modes
from xeval.engine.config import OBJECTIVE_CHOICES

KINDS = {"bert": "bert", "roberta": "roberta", "xlm-roberta": "roberta"}  # model_type -> position numbering
ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "relu": "relu", "gelu_new": "gelu_new",
               "gelu_pytorch_tanh": "gelu_new"}  # HF's name -> the engine's (same function)  # fmt: skip
# model.<key> that must keep the init model's architecture: key -> the only value the init model has
FIXED = {"pre_norm": False, "bias": True, "position_embedding": "absolute", "language_embeddings": False}
SHAPE_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "hidden_act", "layer_norm_eps", "max_position_embeddings")  # fmt: skip
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "sentencepiece.bpe.model")
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
PREFIXES = ("bert.", "roberta.", "xlm_roberta.", "model.")  # of *ForMaskedLM and similar checkpoints
LAYER_KEYS = {  # engine name in layers.<i>. -> HF name in encoder.layer.<i>. (q/k/v are fused separately)
    "attn.out": "attention.output.dense", "ln_attn": "attention.output.LayerNorm",
    "ffn.fc": "intermediate.dense", "ffn.proj": "output.dense", "ln_ffn": "output.LayerNorm",
}  # fmt: skip
MLM_HEADS = {  # kind -> engine MLMHead name -> HF name
    "bert": {"dense.weight": "cls.predictions.transform.dense.weight",
             "dense.bias": "cls.predictions.transform.dense.bias",
             "norm.weight": "cls.predictions.transform.LayerNorm.weight",
             "norm.bias": "cls.predictions.transform.LayerNorm.bias", "bias": "cls.predictions.bias"},
    "roberta": {"dense.weight": "lm_head.dense.weight", "dense.bias": "lm_head.dense.bias",
                "norm.weight": "lm_head.layer_norm.weight", "norm.bias": "lm_head.layer_norm.bias",
                "bias": "lm_head.bias"},
}  # fmt: skip


def _normalise(name: str) -> str:
    """``bert.encoder.layer.0...LayerNorm.gamma`` -> ``encoder.layer.0...LayerNorm.weight`` (older TF-converted
    checkpoints say gamma / beta)."""
    for prefix in PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    if name.endswith(".gamma"):
        name = name[: -len("gamma")] + "weight"
    elif name.endswith(".beta"):
        name = name[: -len("beta")] + "bias"
    return name


@dataclass
class InitModel:
    """A readable init folder: checked in ``read_init`` before anything is written."""

    path: Path  # the folder model.init names (resolved)
    folder: Path  # where its config.json and weights are: the root or a sentence-transformers module folder
    tokenizer_dir: Path
    kind: str  # "bert" | "roberta"
    hf: dict  # its config.json
    files: list[Path]  # the safetensors weight files
    names: dict[str, tuple[Path, str]]  # normalised weight name -> (file, the name stored in it)
    shapes: dict[str, list[int]]  # normalised weight name -> shape

    @property
    def offset(self) -> int:
        """The position table's first row used by token 0: RoBERTa numbers positions from padding_idx + 1."""
        return int(self.hf.get("pad_token_id", 1)) + 1 if self.kind == "roberta" else 0

    def shape(self) -> dict:
        """The engine's ``model`` keys of this encoder (``SHAPE_KEYS``)."""
        h = self.hf
        return {"vocab_size": self.shapes["embeddings.word_embeddings.weight"][0],
                "hidden_size": int(h["hidden_size"]), "num_hidden_layers": int(h["num_hidden_layers"]),
                "num_attention_heads": int(h["num_attention_heads"]),
                "intermediate_size": int(h["intermediate_size"]), "hidden_act": ACTIVATIONS[h.get("hidden_act", "gelu")],
                "layer_norm_eps": float(h.get("layer_norm_eps", 1e-12)),
                "max_position_embeddings": self.shapes["embeddings.position_embeddings.weight"][0] - self.offset}  # fmt: skip

    def provenance(self) -> dict:
        """What the card records: the folder, its kind and the SHA-256 over its weight files (in name order)."""
        digest = hashlib.sha256()
        for file in self.files:
            with file.open("rb") as handle:
                while block := handle.read(1 << 22):
                    digest.update(block)
        return {"path": str(self.path), "model_type": self.hf.get("model_type"),
                "weights": [os.path.relpath(f, self.path) for f in self.files], "weights_sha256": digest.hexdigest()}

    def tensor(self, name: str) -> torch.Tensor:
        file, stored = self.names[name]
        with safe_open(str(file), framework="pt") as handle:
            return handle.get_tensor(stored).float()

    def copy_tokenizer(self, out: Path) -> None:
        """The init model's tokenizer files into ``out``, byte for byte."""
        out.mkdir(parents=True, exist_ok=True)
        for name in TOKENIZER_FILES:
            if (self.tokenizer_dir / name).is_file():
                shutil.copyfile(self.tokenizer_dir / name, out / name)


def _fail(where: Path, what: str):
    raise ConfigError(f"model.init {where}: {what}")


def _module_folder(root: Path) -> Path:
    """The sentence-transformers Transformer module's folder (``modules.json``), else ``root``."""
    modules = root / "modules.json"
    if not modules.is_file():
        return root
    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
        paths = [e.get("path", "") for e in entries if str(e.get("type", "")).endswith("models.Transformer")]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, TypeError):
        _fail(modules, "expected a JSON list of sentence-transformers modules")
    if not paths:
        _fail(modules, "expected a sentence_transformers.models.Transformer module")
    folder = (root / paths[0]).resolve()
    return folder if (folder / "config.json").is_file() else root


def _weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            return sorted({folder / name for name in weight_map.values()})
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            _fail(index, "expected a safetensors index with a 'weight_map'")
    if any((folder / n).is_file() for n in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")):
        _fail(folder, "expected model.safetensors; only safetensors weights are read (a pickled pytorch_model.bin "
                      "is not: convert it with transformers' save_pretrained(..., safe_serialization=True))")
    _fail(folder, "expected model.safetensors (the encoder's weights), found none")


def read_init(spec: str) -> InitModel:
    """Check the folder (config, weights' names and shapes, tokenizer) without reading a weight: one ConfigError
    line naming the file and what was expected."""
    root = Path(spec).expanduser().resolve()
    if not root.is_dir():
        _fail(root, "no such folder (expected a Hugging Face BERT or XLM-R model folder)")
    folder = _module_folder(root)
    config_path = folder / "config.json"
    try:
        hf = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        _fail(root, "expected a Hugging Face model folder with config.json (or a sentence-transformers folder)")
    except (OSError, UnicodeDecodeError, ValueError):
        _fail(config_path, "expected a JSON model config")
    if not isinstance(hf, dict):
        _fail(config_path, "expected a JSON object")
    model_type = hf.get("model_type")
    if model_type not in KINDS:
        _fail(config_path, f"model_type {model_type!r}; expected a BERT or XLM-R encoder (model_type one of "
                           f"{sorted(KINDS)})")
    for key, want in (("position_embedding_type", "absolute"), ("is_decoder", False), ("add_cross_attention", False)):
        if hf.get(key, want) != want:
            _fail(config_path, f"{key} {hf[key]!r}; the engine reproduces only {key} {want!r}")
    if hf.get("hidden_act", "gelu") not in ACTIVATIONS:
        _fail(config_path, f"hidden_act {hf['hidden_act']!r}; expected one of {sorted(ACTIVATIONS)}")
    missing = [k for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
               if not isinstance(hf.get(k), int) or isinstance(hf.get(k), bool) or hf[k] < 1]
    if missing:
        _fail(config_path, f"expected positive integers for {missing}")
    files = _weight_files(folder)
    names, shapes = {}, {}
    for file in files:
        if not file.is_file():
            _fail(file, "listed in model.safetensors.index.json but missing")
        check_safetensors(file)  # a truncated download is one line, before safe_open reads it
        with safe_open(str(file), framework="pt") as handle:
            for stored in handle.keys():
                name = _normalise(stored)
                names[name] = (file, stored)
                shapes[name] = list(handle.get_slice(stored).get_shape())
    kind = KINDS[model_type]
    init = InitModel(root, folder, folder, kind, hf, files, names, shapes)
    _check_weights(init, config_path)
    init.tokenizer_dir = _check_tokenizer(init, root)
    return init


def _expected_shapes(init: InitModel) -> dict[str, list[int]]:
    h = init.hf
    d, ff, n = h["hidden_size"], h["intermediate_size"], h["num_hidden_layers"]
    want = {"embeddings.LayerNorm.weight": [d], "embeddings.LayerNorm.bias": [d]}
    for i in range(n):
        p = f"encoder.layer.{i}."
        for proj in ("query", "key", "value"):
            want[p + f"attention.self.{proj}.weight"], want[p + f"attention.self.{proj}.bias"] = [d, d], [d]
        want[p + "attention.output.dense.weight"], want[p + "attention.output.dense.bias"] = [d, d], [d]
        want[p + "intermediate.dense.weight"], want[p + "intermediate.dense.bias"] = [ff, d], [ff]
        want[p + "output.dense.weight"], want[p + "output.dense.bias"] = [d, ff], [d]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            want[p + norm + ".weight"], want[p + norm + ".bias"] = [d], [d]
    return want


def _check_weights(init: InitModel, config_path: Path) -> None:
    h, shapes = init.hf, init.shapes
    d = h["hidden_size"]
    if d % h["num_attention_heads"]:
        _fail(config_path, f"hidden_size {d} is not divisible by num_attention_heads {h['num_attention_heads']}")
    where = init.files[0] if len(init.files) == 1 else init.folder
    for name in ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"):
        if name not in shapes:
            _fail(where, f"missing weight {name!r} (expected a {h['model_type']} encoder's weights)")
        if len(shapes[name]) != 2 or shapes[name][1] != d:
            _fail(where, f"{name} has shape {shapes[name]}; expected [rows, {d}] (hidden_size of config.json)")
    if shapes["embeddings.position_embeddings.weight"][0] <= init.offset:
        _fail(where, f"a position table of {shapes['embeddings.position_embeddings.weight'][0]} rows leaves no "
                     f"position after padding_idx {init.offset - 1}")
    types = shapes.get("embeddings.token_type_embeddings.weight")
    if types is not None and (len(types) != 2 or types[1] != d):
        _fail(where, f"embeddings.token_type_embeddings.weight has shape {types}; expected [types, {d}]")
    want = _expected_shapes(init)
    missing = [k for k in want if k not in shapes]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        _fail(where, f"missing weights {missing[:3]}{more} (expected the {h['num_hidden_layers']} layers of "
                     "config.json)")
    wrong = [f"{k} {shapes[k]} (expected {v})" for k, v in want.items() if shapes[k] != v]
    if wrong:
        _fail(where, f"weights of another shape than config.json says: {wrong[0]}")


def _check_tokenizer(init: InitModel, root: Path) -> Path:
    from tokenizers import Tokenizer

    found = [p for p in (init.folder, root) if (p / "tokenizer.json").is_file()]
    if not found:
        _fail(root, "expected tokenizer.json (a fast tokenizer): a continued run keeps the init model's tokenizer")
    try:
        tok = Tokenizer.from_file(str(found[0] / "tokenizer.json"))
    except Exception as err:  # tokenizers raises its own Exception type for unreadable files
        _fail(found[0] / "tokenizer.json", f"cannot be read ({str(err).splitlines()[0][:120]})")
    absent = [t for t in SPECIALS if tok.token_to_id(t) is None]
    if absent:
        _fail(found[0] / "tokenizer.json", f"lacks the special tokens {absent}; the engine's objectives need "
                                           f"XLM-R's {' '.join(SPECIALS)}")
    rows = init.shapes["embeddings.word_embeddings.weight"][0]
    if tok.get_vocab_size() > rows:
        _fail(found[0] / "tokenizer.json", f"{tok.get_vocab_size()} ids but the embedding has {rows} rows")
    if init.kind == "roberta" and tok.token_to_id("<pad>") != int(init.hf.get("pad_token_id", 1)):
        _fail(found[0] / "tokenizer.json", f"<pad> is id {tok.token_to_id('<pad>')} but config.json's pad_token_id "
                                           f"is {init.hf.get('pad_token_id', 1)} (RoBERTa's positions count from it)")
    return found[0]


def apply_init(cfg, init: InitModel):
    """(``cfg`` with the init model's shape in its ``model`` section, the log lines naming each replaced value).
    Options that would change the architecture are a ConfigError."""
    model = dict(cfg.model)
    for key, only in FIXED.items():
        if key in model and model[key] is not None and model[key] != only:
            raise ConfigError(f"model.{key} {model[key]!r} contradicts model.init {init.path} (a "
                              f"{init.hf['model_type']} encoder has {key} {only!r}); remove it or train from scratch")
    lines = []
    for key, value in init.shape().items():
        if key in model and model[key] is not None and model[key] != value:
            lines.append(f"model.{key} {model[key]!r} -> {value!r} (the init model's)")
        model[key] = value
    model["init"] = str(init.path)
    return cfg.updated({"model": model}), lines + pooling_notes(init.path, cfg.objectives)


def sentence_pooling(root: Path) -> str | None:
    """How a sentence-transformers folder pools its sentence vectors (its Pooling module: "cls", "mean", "max"),
    None for another folder, an unreadable module or several modes concatenated (nothing to compare with then)."""
    config = pooling_config(root)
    modes = pooling_modes(config) if config is not None else []
    return modes[0] if len(modes) == 1 else None


def pooling_notes(root: Path, objectives: dict) -> list[str]:
    """A log line for each sentence-level objective that pools otherwise than the init model was trained to. Why it
    matters: a model trained with mean pooling has no reason to put a sentence into its first token -- in
    multilingual-e5-small the [CLS] state of layer 8 (InfoXLM's XLCO layer) is the same vector for every sentence
    (cosine 1.000 between unrelated ones, measured), so XLCO's logits are all equal and its loss stays at
    log(queue + 1), learning nothing."""
    mode = sentence_pooling(root)
    if mode is None:
        return []
    engine_modes = OBJECTIVE_CHOICES["pooling"]
    return [f"note: objectives.{name}.pooling is {spec['pooling']!r}, but the init model was trained to pool "
            f"{mode!r} ({root / 'modules.json'}): its {spec['pooling']!r} vector need not represent the sentence "
            + (f"(--set objectives.{name}.pooling={mode} pools as it was trained)" if mode in engine_modes else
               f"(the engine's objectives pool {' or '.join(engine_modes)} only)")
            for name, spec in objectives.items()
            if isinstance(spec, dict) and spec.get("pooling") not in (None, mode)]


def check_lengths(cfg, needs: set[str]) -> None:
    """Rows the streams build must fit the init model's positions (its table cannot grow): a ConfigError naming
    the key, before anything is read, instead of an index error at the first step."""
    limit = int(cfg.model["max_position_embeddings"])
    rows = {"data.seq_len": cfg.data.seq_len} if "mono" in needs else {}
    if "pairs" in needs:  # a concatenated pair: <s> A </s></s> B </s>
        rows["data.pair_max_side"] = 2 * cfg.data.pair_max_side + 4
    for key, length in rows.items():
        if length > limit:
            raise ConfigError(f"{key} gives rows of {length} tokens but model.init {cfg.model['init']} has "
                              f"{limit} positions; lower {key}")


def check_resumed_init(out: Path, provenance: dict) -> None:
    """``--resume`` of a continued run: the init folder's weights must be those the run started from (the card in
    ``out`` records their SHA-256); the saved state holds the trained weights, but the shape, tokenizer and
    provenance come from the folder again."""
    try:
        saved = (json.loads((out / "xeval_pretrain.json").read_text(encoding="utf-8")).get("init") or {})
        before = saved.get("weights_sha256")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return  # no card (an interrupted first save): the config's folder and shape were compared already
    if before and before != provenance["weights_sha256"]:
        raise UserError(f"{out}: --resume with model.init {provenance['path']} whose weights changed since the run "
                        f"started (SHA-256 {before[:12]} -> {provenance['weights_sha256'][:12]}); restore them or "
                        f"choose a new --out")


def load_init_weights(model, init: InitModel) -> list[str]:
    """The init model's weights into ``model.encoder`` (every tensor the encoder has, the relative position bias
    excepted, which starts at zero) and, where the folder has them, into the MLM head; returns the log lines."""
    enc = model.encoder
    pos = init.tensor("embeddings.position_embeddings.weight")  # (rows, C)
    pos = pos[init.offset : init.offset + enc.config.max_position_embeddings]
    if "embeddings.token_type_embeddings.weight" in init.names:  # type 0 is added to every token: fold it
        pos = pos + init.tensor("embeddings.token_type_embeddings.weight")[0][None]
    state = {"embeddings.tokens.weight": init.tensor("embeddings.word_embeddings.weight"),
             "embeddings.positions.weight": pos,
             "embeddings.norm.weight": init.tensor("embeddings.LayerNorm.weight"),
             "embeddings.norm.bias": init.tensor("embeddings.LayerNorm.bias")}  # fmt: skip
    for i in range(enc.config.num_hidden_layers):
        p, q = f"layers.{i}.", f"encoder.layer.{i}."
        for part in ("weight", "bias"):  # fused rows [q; k; v]: (3C, C) and (3C,)
            state[p + f"attn.qkv.{part}"] = torch.cat(
                [init.tensor(q + f"attention.self.{proj}.{part}") for proj in ("query", "key", "value")])
            for ours, theirs in LAYER_KEYS.items():
                state[p + f"{ours}.{part}"] = init.tensor(q + f"{theirs}.{part}")
    with torch.no_grad():
        # in place: modules sharing the embeddings (XLM-E's generator) follow
        result = enc.load_state_dict(state, strict=False)
        added = {name for name in enc.state_dict() if name.startswith("relative.") or ".attn.gate_" in name}
        if result.unexpected_keys or set(result.missing_keys) != added:  # only the bias may be new (a bug otherwise)
            raise RuntimeError(f"init weights do not fit the engine model: missing {sorted(result.missing_keys)}, "
                               f"unexpected {sorted(result.unexpected_keys)}")
        if enc.relative is not None:  # zero bias: step 0 computes what the init model computes
            enc.relative.table.weight.zero_()
        for obj in model.objectives.values():  # XLCO's momentum encoder starts as a copy of the encoder
            key_encoder = getattr(obj, "key_encoder", None)
            if key_encoder is not None:
                key_encoder.load_state_dict(enc.state_dict(), strict=True)
    lines = [f"init: {init.hf['model_type']} encoder from {init.path} ({len(state)} tensors; positions from row "
             f"{init.offset}" + (", token type 0 folded into them)" if "embeddings.token_type_embeddings.weight"
                                 in init.names else ")")]  # fmt: skip
    if enc.relative is not None:
        lines.append(f"init: {enc.config.relative_attention} relative position bias added, its table at zero (the "
                     "init model's attention at step 0)")
    head = model.heads["mlm"] if "mlm" in model.heads else None
    if head is not None:
        names = MLM_HEADS[init.kind]
        if all(theirs in init.names for theirs in names.values()):
            with torch.no_grad():
                head.load_state_dict({ours: init.tensor(theirs) for ours, theirs in names.items()}, strict=True)
            lines.append("init: MLM head from the init folder")
        else:
            lines.append("init: the init folder has no MLM head: the head starts from train.seed's random weights")
    return lines
