"""One Encoder interface over Hugging Face models (hub id or local directory) and xeval engine checkpoints.

The encoder owns the tokenizer and the backbone (``AutoModel``: no task head). It gives

- identity: ``key`` ("<name>@<12 hex of the weights' sha256>") and ``identity()`` for result records;
- tokenisation with word↔subword maps (``tokenize_words``), from the fast tokenizer;
- one forward pass returning every hidden state (``forward``), and pooled sentence vectors of every layer at once
  (``sentence_embeddings``): a layer sweep costs one forward pass, not one per layer.

Layers follow Hugging Face's convention: ``hidden_states[0]`` is the embedding output, ``hidden_states[k]`` the
output of transformer layer k.

Weights are loaded from safetensors only (``use_safetensors=True``): a ``pytorch_model.bin`` is never unpickled.
Remote code runs only when the user asks for it (``trust_remote_code``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from xeval.base import console
from xeval.base.errors import UserError
from xeval.base.hashing import hash_files, hash_json
from xeval.models import load_report
from xeval.models.batching import length_batches
from xeval.models.files import check_model_folder, locate_model, unfinished_run
from xeval.models.layer_stack import stack_cut_after
from xeval.models.sentence_modules import read_pipeline
from xeval.results.controls import CONTROL_RANDOM_INIT


@dataclass
class WordBatch:
    """A tokenised batch of pre-split sentences.

    input_ids, attention_mask: [B, T]; word_ids[b][t] = index of the word that subword t belongs to, or None for
    special tokens and padding.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    word_ids: list[list[int | None]]

    def to(self, device) -> WordBatch:
        return WordBatch(self.input_ids.to(device), self.attention_mask.to(device), self.word_ids)


def state_hash(model: torch.nn.Module, config=None, tokenizer=None) -> str:
    """sha256 over the parameters' names, dtypes, shapes and bytes (sorted by name), the architecture's config
    without paths or versions, and the fast tokenizer's serialisation: the identity of weights that exist in memory
    only (a random-init control)."""
    import hashlib

    digest = hashlib.sha256()
    if tokenizer is not None and getattr(tokenizer, "backend_tokenizer", None) is not None:
        import json

        # without the truncation/padding state, which calling the tokenizer changes
        body = {k: v for k, v in json.loads(tokenizer.backend_tokenizer.to_str()).items()
                if k not in {"truncation", "padding"}}
        digest.update(hash_json(body).encode())
    if config is not None:
        body = {k: v for k, v in config.to_dict().items()
                if k not in {"_name_or_path", "name_or_path", "_commit_hash", "transformers_version"}}
        digest.update(hash_json(body).encode())
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().to("cpu", torch.float32).contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(data.numpy().tobytes())
    return digest.hexdigest()


# Besides the weights (*.safetensors) and config.json, the files that change what a model computes for a text:
# the tokenizer's (fast and slow formats) and a sentence-transformers folder's module configs (pooling, Dense,
# Normalize). Logs, READMEs and training state are left out: they change no number.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
                   "sentencepiece.model", "tokenizer.model", "bpe.codes")
SENTENCE_TRANSFORMERS_FILES = ("modules.json", "sentence_bert_config.json", "*_Pooling/config.json",
                               "*_Dense/config.json", "*_Dense/*.safetensors")


def identity_files(folder: Path) -> list[Path]:
    """The files of a model folder that its key hashes, in a fixed order."""
    out = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("config.json"))
    for name in TOKENIZER_FILES + SENTENCE_TRANSFORMERS_FILES:
        out += [p for p in sorted(folder.glob(name)) if p not in out]
    return out


def _hub_sentence_folder(repo: str, revision: str | None) -> Path | None:
    """The hub repository's sentence-transformers files (``modules.json`` and the module configs, Dense weights),
    fetched into the hub cache (or found there offline); None when the repository has none or the hub is out of
    reach. transformers itself never downloads them."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None

    def fetch(name: str) -> Path | None:
        try:
            return Path(hf_hub_download(repo, name, revision=revision))
        except Exception:  # noqa: BLE001 - absent file, no network, no cache: the bare backbone it is
            return None

    modules = fetch("modules.json")
    if modules is None:
        return None
    import json

    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
    except ValueError:
        return None
    fetch("sentence_bert_config.json")
    for entry in entries if isinstance(entries, list) else []:
        path = str(entry.get("path", "")).strip("/")
        if path:
            fetch(f"{path}/config.json")
            if str(entry.get("type", "")).endswith("Dense"):
                fetch(f"{path}/model.safetensors")
    return modules.parent  # the snapshot folder the files were cached in


def _import_engine() -> None:
    """Register xeval's own architecture with transformers' Auto classes (if the engine is installed)."""
    try:
        import xeval.engine  # noqa: F401
    except ImportError:
        pass


class Encoder:
    def __init__(
        self,
        model: str | os.PathLike,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
        revision: str | None = None,
        trust_remote_code: bool = False,
        max_length: int | None = None,
    ):
        from transformers import AutoModel, AutoTokenizer

        _import_engine()
        if not isinstance(model, str | os.PathLike):
            raise UserError(f"expected a hub id or a model folder, found a {type(model).__name__}; for a model in "
                            "memory use Encoder.from_objects(model, tokenizer) or xeval.evaluate((model, tokenizer))")
        self.spec = str(model)
        self.revision = revision
        self.device = torch.device(device)
        local = Path(self.spec).expanduser()
        self.is_local = locate_model(self.spec) is not None
        self.trust_remote_code = bool(trust_remote_code)
        if self.is_local:
            check_model_folder(local)
            if unfinished := unfinished_run(local):
                console.log.warning(unfinished)
        source = str(local) if self.is_local else self.spec
        from safetensors import SafetensorError
        from transformers.utils import logging as hf_logging

        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # the "Loading weights" bar would come before an error's one line
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(
                source, revision=revision, trust_remote_code=trust_remote_code, use_fast=True
            )
            with load_report.quiet_report():  # its table becomes one line of ours, and only for a real problem
                self.model, info = AutoModel.from_pretrained(source, revision=revision, dtype=dtype,
                                                             trust_remote_code=trust_remote_code,
                                                             use_safetensors=True, output_loading_info=True)
        except (OSError, ValueError, TypeError, KeyError, RuntimeError, SafetensorError) as err:
            # a folder or hub repository transformers cannot read (the local checks above catch the usual cases)
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            where = "" if self.is_local else "no local folder of that name; as a hub id: "
            raise UserError(f"{self.spec}: cannot load model and tokenizer ({where}{first})") from None
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        if not getattr(self.tokenizer, "is_fast", False):
            raise UserError(f"{self.spec}: xeval needs a fast tokenizer (word↔subword maps); none found")
        if problem := load_report.unexpected_line(self.spec, info):  # weights missing or unused outside known heads
            console.log.warning(problem)
        if heads := load_report.known_heads_line(self.spec, info):  # e.g. a pooler the checkpoint lacks (-v)
            console.log.debug(heads)
        self.model.to(self.device).eval()
        # drawn from the global RNG at load (e.g. BERT's pooler in a sentence-transformers export): fine-tuning
        # draws them again under its seed (adapters/transfer/backbone.py)
        self.missing_weights = tuple(sorted(info.get("missing_keys") or ()))
        self.kind = "engine" if getattr(self.model.config, "model_type", "").startswith("xeval") else "hf"
        self.num_layers = int(self.model.config.num_hidden_layers)
        self.hidden_size = int(self.model.config.hidden_size)
        self.max_length = max_length or self._default_max_length()
        self._hash: str | None = None
        self.control: dict | None = None  # set on a control copy (``random_init``): what it controls for
        self.label: str | None = None  # ``xeval run --name TAG``: the name in the model key (default: the folder's)
        # a sentence-transformers folder's own pooling (modules.json), used by the sentence probes
        folder = local if self.is_local else _hub_sentence_folder(self.spec, revision)
        self.sentence_pipeline = read_pipeline(folder, self.hidden_size) if folder is not None else None
        if self.sentence_pipeline is not None and self.sentence_pipeline.ignored:
            console.log.warning(f"{self.spec}: sentence-transformers modules not honoured: "
                                f"{'; '.join(self.sentence_pipeline.ignored)} (the sentence probes apply the rest: "
                                f"{self.sentence_pipeline.describe()})")

    @classmethod
    def from_objects(cls, model: torch.nn.Module, tokenizer, name: str | None = None,
                     device: str | None = None) -> Encoder:
        """An Encoder over a model and a fast tokenizer already in memory (``transformers`` objects). A model with a
        head (``...ForMaskedLM``) is used through its backbone (``base_model``). Its identity is the exact bytes of
        the weights (``state_hash``), its name ``name`` or the model's ``name_or_path``."""
        if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
            raise UserError(f"expected a transformers model (nn.Module with a config), found {type(model).__name__}")
        if not getattr(tokenizer, "is_fast", False):
            raise UserError("xeval needs a fast tokenizer (word↔subword maps); pass a PreTrainedTokenizerFast")
        backbone = getattr(model, "base_model", model)
        self = cls.__new__(cls)
        label = name or Path(str(getattr(model.config, "_name_or_path", "") or "")).name or type(model).__name__
        self.spec, self.revision, self.is_local = label, None, False
        self.device = torch.device(device) if device else next(backbone.parameters()).device
        self.tokenizer, self.model = tokenizer, backbone.to(self.device).eval()
        self.kind = "engine" if getattr(backbone.config, "model_type", "").startswith("xeval") else "hf"
        self.num_layers = int(backbone.config.num_hidden_layers)
        self.hidden_size = int(backbone.config.hidden_size)
        self.max_length = self._default_max_length()
        self._hash = state_hash(backbone, backbone.config, tokenizer)
        self.control = None
        self.label = None
        self.sentence_pipeline = None
        return self

    @classmethod
    def random_init(cls, parent: Encoder, seed: int = 0) -> Encoder:
        """A random-initialised copy of ``parent``'s architecture: the same config and tokenizer, weights from
        ``AutoModel.from_config`` under ``torch.manual_seed(seed)`` (deterministic; the caller's RNG state is left
        as it was). Scores of this control say what the architecture and tokenizer give without pre-training
        (shared word forms, cognates), the floor a probe score should be read against.

        Its key is ``<parent name>-random-init@<12 hex of the random weights' hash>``, so records of the control sit
        beside the model's in a store, and its ``identity()`` names the control and the parent's hash.
        """
        import copy

        from transformers import AutoModel

        config = copy.deepcopy(parent.model.config)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModel.from_config(config, dtype=torch.float32)  # initialised on the CPU: device-independent
        weights_hash = state_hash(model, config, parent.tokenizer)
        self = cls.__new__(cls)
        self.spec, self.revision, self.device, self.is_local = parent.spec, None, parent.device, parent.is_local
        self.tokenizer = parent.tokenizer
        self.model = model.to(device=parent.device, dtype=parent.model.dtype).eval()
        self.kind, self.num_layers, self.hidden_size = parent.kind, parent.num_layers, parent.hidden_size
        self.max_length = parent.max_length
        self.label = parent.label
        # the same pooling; a Dense layer's trained weights are no part of a random-init control
        pipeline = parent.sentence_pipeline
        self.sentence_pipeline = None if pipeline is None else replace(pipeline, dense=[])
        self._hash = weights_hash
        self.control = {"control": CONTROL_RANDOM_INIT, "control_seed": int(seed), "parent": {
            "key": parent.key, "id": parent.spec, "hash": parent.weights_hash}}
        return self

    # ------------------------------------------------------------------ identity

    def _default_max_length(self) -> int:
        limits = [int(self.tokenizer.model_max_length)] if self.tokenizer.model_max_length < 1e6 else []
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if positions:
            # RoBERTa-style models reserve padding_idx + 1 positions.
            offset = 2 if getattr(self.model.config, "model_type", "") in {"roberta", "xlm-roberta"} else 0
            limits.append(int(positions) - offset)
        return min(limits) if limits else 512

    @property
    def weights_hash(self) -> str:
        """sha256 of the files that decide the model's outputs: weights, config and tokenizer files
        (``identity_files``), or of the state dict when no files are at hand."""
        if self._hash is None:
            files = self._weight_files()
            if files:
                self._hash = hash_files(files)
            else:
                self._hash = hash_json({k: v.float().sum().item() for k, v in self.model.state_dict().items()})
        return self._hash

    def _weight_files(self) -> list[Path]:
        if self.is_local:
            folder = Path(self.spec).expanduser()
        else:
            commit = getattr(self.model.config, "_commit_hash", None)
            folder = None
            if commit:
                from huggingface_hub import snapshot_download

                try:
                    folder = Path(snapshot_download(self.spec, revision=commit, local_files_only=True))
                except Exception:  # noqa: BLE001 - an unreachable cache only costs us the file hash
                    folder = None
            if folder is None:
                return []
        return identity_files(folder)

    def settings(self) -> dict:
        """The encoder's settings that change its outputs beyond the files its key hashes (part of every unit's
        config hash, ``xeval.results.identity``)."""
        return {"dtype": str(self.model.dtype).removeprefix("torch.")}

    @property
    def cache_key(self) -> str:
        """The model part of an encoding-cache key (``xeval.models.encoding_cache``): the weights' hash, a fingerprint of the
        tokenizer (the same weights with another vocabulary encode differently), the device type and dtype."""
        if getattr(self, "_cache_key", None) is None:
            backend = getattr(self.tokenizer, "backend_tokenizer", None)
            if backend is not None:
                import json

                # without the truncation / padding state, which each call of the tokenizer sets anew
                tokenizer = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
            else:
                tokenizer = repr(self.tokenizer)
            self._cache_key = hash_json([self.weights_hash, hash_json(tokenizer), self.device.type,
                                         str(self.model.dtype)])
        return self._cache_key

    @property
    def series_step(self) -> int | None:
        """The training step of a checkpoint-series member (``<run>/steps/step-NNNNNNN/``, written by the engine's
        ``train.export_every``: its ``xeval_pretrain.json`` has ``step``), else None."""
        if not self.is_local or self.control:
            return None
        card = Path(self.spec) / "xeval_pretrain.json"
        try:
            import json

            step = json.loads(card.read_text(encoding="utf-8")).get("step") if card.is_file() else None
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        return step if isinstance(step, int) and not isinstance(step, bool) else None

    @property
    def name(self) -> str:
        base = self.label or (Path(self.spec.rstrip("/")).name if self.is_local else self.spec.replace("/", "__"))
        return f"{base}-{self.control['control']}" if self.control else base

    @property
    def key(self) -> str:
        return f"{self.name}@{self.weights_hash[:12]}"

    def identity(self) -> dict:
        return {
            "id": self.spec,
            "kind": self.kind,
            "hash": self.weights_hash,
            "revision": self.revision or getattr(self.model.config, "_commit_hash", None),
            "model_type": getattr(self.model.config, "model_type", None),
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            **self.settings(),
            **({"name": self.label} if self.label else {}),
            **({"step": self.series_step} if self.series_step is not None else {}),
            **({"trust_remote_code": True} if getattr(self, "trust_remote_code", False) else {}),
            **(self.control or {}),
        }

    # ------------------------------------------------------------------ tokenisation

    def tokenize_words(self, sentences: list[list[str]], max_length: int | None = None) -> WordBatch:
        """Tokenise pre-split sentences, keeping the subword→word map. Truncates at ``max_length``: callers that
        must not lose words (tagging) split long sentences first (see ``xeval.adapters.transfer.tagging``)."""
        enc = self.tokenizer(
            sentences,
            is_split_into_words=True,
            truncation=True,
            max_length=max_length or self.max_length,
            padding=True,
            return_tensors="pt",
        )
        word_ids = [enc.word_ids(i) for i in range(len(sentences))]
        return WordBatch(enc["input_ids"], enc["attention_mask"], word_ids)

    def tokenize_texts(self, texts: list[str], max_length: int | None = None) -> dict[str, torch.Tensor]:
        return self.tokenizer(
            texts, truncation=True, max_length=max_length or self.max_length, padding=True, return_tensors="pt"
        )

    # ------------------------------------------------------------------ forward

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                up_to: int | None = None) -> tuple[torch.Tensor, ...]:
        """All hidden states: a tuple of num_layers + 1 tensors [B, T, H]; with ``up_to`` k at least k + 1 of them,
        the first k + 1 the same as a full pass's (bit for bit: ``xeval.models.layer_stack``)."""
        def run():
            return self.model(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
                              output_hidden_states=True, return_dict=True).hidden_states

        with stack_cut_after(self.model, self.num_layers if up_to is None else up_to) as cut:
            states = tuple(run())
        if cut and len(states) != up_to + 1:  # transformers recorded the states some other way: the full pass
            states = tuple(run())
        if not cut and len(states) != self.num_layers + 1:  # never a silently shorter list of layers
            raise RuntimeError(f"{self.spec}: {len(states)} hidden states from a full pass, expected "
                               f"{self.num_layers + 1}")
        return states

    @torch.inference_mode()
    def sentence_embeddings(
        self,
        texts: list[str],
        layers: list[int] | None = None,
        pooling: str = "mean",
        include_special: bool = True,
        batch_size: int = 32,
        max_length: int | None = None,
        progress: bool = True,
    ) -> np.ndarray:
        """Pooled sentence vectors of several layers from ONE forward pass per batch.

        Returns float32 [len(layers), N, H] in the order of ``texts`` (batches by subword count, ``batching``).
        pooling: "mean" (XTREME's Tatoeba/BUCC choice), "cls", or "model": as a sentence-transformers folder's
        modules say (``xeval.models.sentence_modules``; Dense and Normalize on the last layer). include_special: mean over
        all tokens including <s>/</s> (XTREME) or over word tokens only (not for "model", which pools as the
        folder says).
        """
        if pooling not in {"mean", "cls", "model"}:
            raise UserError(f"unknown pooling {pooling!r}; expected 'mean', 'cls' or 'model'")
        pipeline = self.sentence_pipeline if pooling == "model" else None
        if pooling == "model" and pipeline is None:
            raise UserError(f"{self.spec}: pooling 'model' needs a sentence-transformers folder (modules.json)")
        if pipeline is not None and pipeline.do_lower_case:
            texts = [t.lower() for t in texts]
        layers = list(range(self.num_layers + 1)) if layers is None else list(layers)
        for layer in layers:
            if not 0 <= layer <= self.num_layers:
                raise UserError(f"layer {layer} out of range: {self.spec} has layers 0..{self.num_layers}")
        out = np.zeros((len(layers), len(texts), self.hidden_size), dtype=np.float32)
        limit = max_length or self.max_length
        # by subword count under a token budget (xeval.models.batching): the padded shape is what a forward pays for
        # tokenised once: the subword counts decide the batches, each batch is padded from the same ids
        encoded = self.tokenizer(texts, truncation=True, max_length=limit, return_special_tokens_mask=True)
        fields = ("input_ids", "attention_mask", "special_tokens_mask")
        batches = length_batches([len(ids) for ids in encoded["input_ids"]], batch_size)
        if progress:  # drawn on a terminal only (xeval.base.console)
            batches = console.progress(batches, desc=f"encode {len(texts)} sentences", unit="batch")
        for idx in batches:
            enc = self.tokenizer.pad({k: [encoded[k][i] for i in idx] for k in fields}, return_tensors="pt")
            states = self.forward(enc["input_ids"], enc["attention_mask"], up_to=max(layers, default=None))
            mask = enc["attention_mask"].to(self.device).float()  # [B, T]
            if not include_special:
                mask = mask * (1 - enc["special_tokens_mask"].to(self.device).float())
            for row, layer in enumerate(layers):
                h = states[layer].float()  # [B, T, H]
                if pipeline is not None:
                    pooled = pipeline.pool(h, enc["attention_mask"].to(self.device), last=layer == self.num_layers)
                elif pooling == "cls":
                    pooled = h[:, 0]
                else:
                    pooled = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
                out[row, idx] = pooled.cpu().numpy()
        return out

    @torch.inference_mode()
    def word_piece_states(
        self, sentences: list[list[str]], layers: list[int] | None = None, batch_size: int = 32,
        progress: bool = True,
    ) -> list[tuple[np.ndarray, list[int]]]:
        """Subword representations of pre-split sentences, for word alignment.

        For each sentence: (states float32 [len(layers), n_subwords, H] without special tokens or padding,
        word index of each of those subwords).
        """
        layers = list(range(self.num_layers + 1)) if layers is None else list(layers)
        results: list[tuple[np.ndarray, list[int]] | None] = [None] * len(sentences)
        # by subword count under a token budget (xeval.models.batching), as sentence_embeddings
        lengths = [len(ids) for ids in self.tokenizer(sentences, is_split_into_words=True, truncation=True,
                                                      max_length=self.max_length)["input_ids"]]
        batches = length_batches(lengths, batch_size)
        if progress:
            batches = console.progress(batches, desc=f"encode {len(sentences)} sentences", unit="batch")
        for idx in batches:
            batch = self.tokenize_words([sentences[i] for i in idx])
            states = self.forward(batch.input_ids, batch.attention_mask, up_to=max(layers, default=None))
            stacked = torch.stack([states[k] for k in layers]).float().cpu().numpy()  # [L, B, T, H]
            for b, i in enumerate(idx):
                positions = [t for t, w in enumerate(batch.word_ids[b]) if w is not None]
                results[i] = (stacked[:, b, positions], [batch.word_ids[b][t] for t in positions])
        return results  # type: ignore[return-value]
