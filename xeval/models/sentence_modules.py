"""A sentence-transformers folder's own sentence pipeline (``modules.json``: Transformer -> Pooling -> Dense ->
Normalize), re-implemented from its module configs so sentence-level probes pool as the model was trained to be
pooled: LaBSE is CLS + Dense(tanh) + Normalize, all-MiniLM-L6-v2 mean + Normalize. Without this a CLS + Dense model
would be read as a bare backbone and mean-pooled, and its retrieval numbers would be wrong.

What is honoured (exactly as sentence_transformers.models computes it):
- Pooling: ``cls`` (the first attended token), ``mean`` (over every attended token, special tokens included,
  denominator clamped at 1e-9), ``max``, ``mean_sqrt_len_tokens``; both the current config (``pooling_mode``) and
  the older booleans (``pooling_mode_cls_token`` ...);
- Dense: ``linear.weight``/``linear.bias`` from the module's ``model.safetensors``, activation Tanh, Identity, ReLU,
  GELU or Sigmoid;
- Normalize: L2 normalisation;
- ``sentence_bert_config.json``: ``max_seq_length`` (inputs truncated there) and ``do_lower_case``;
- ``config_sentence_transformers.json``: ``prompts`` and ``default_prompt_name`` (MTEB's and sentence-transformers'
  input prefixes, e.g. e5's ``query: ``): ``probe_prompt`` is the text the probes put before each input by default
  (``xeval.adapters.probes.base``, option ``prefix``).

Dense and Normalize were trained on the last layer's pooled output, so they apply to ``hidden_states[-1]`` only; a
layer sweep pools the other layers with the Pooling module alone (``describe`` says so). Whatever cannot be honoured
(several pooling modes concatenated, weighted-mean or last-token pooling, ``include_prompt: false``, a Dense layer
that changes the width or has only pickled weights, an unknown module) is listed in ``ignored`` and the encoder
warns naming it; the rest of the pipeline still applies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from xeval.base.st_pooling import pooling_modes

POOLING_MODES = ("cls", "mean", "max", "mean_sqrt_len_tokens")
_ACTIVATIONS = {"Tanh": torch.tanh, "Identity": lambda x: x, "ReLU": torch.relu,
                "GELU": torch.nn.functional.gelu, "Sigmoid": torch.sigmoid}


@dataclass
class Dense:
    weight: torch.Tensor  # [out, in]
    bias: torch.Tensor | None  # [out]
    activation: str

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.weight.T
        if self.bias is not None:
            y = y + self.bias
        return _ACTIVATIONS[self.activation](y)


@dataclass
class SentencePipeline:
    mode: str = "mean"
    dense: list[Dense] = field(default_factory=list)
    normalize: bool = False
    max_seq_length: int | None = None
    do_lower_case: bool = False
    ignored: list[str] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)  # config_sentence_transformers.json: name -> prefix
    default_prompt_name: str | None = None

    def probe_prompt(self) -> str:
        """The prefix of the probes' inputs: the folder's default prompt, else its ``query`` prompt (e5's advice for
        symmetric tasks such as bitext mining, which every probe is), else none ("")."""
        if self.default_prompt_name and self.default_prompt_name in self.prompts:
            return self.prompts[self.default_prompt_name]
        return self.prompts.get("query", "")

    def describe(self) -> str:
        parts = [self.mode] + [f"Dense({d.weight.shape[1]}->{d.weight.shape[0]}, {d.activation})" for d in self.dense]
        parts += ["Normalize"] if self.normalize else []
        tail = " (Dense/Normalize on the last layer only)" if len(parts) > 1 else ""
        return "sentence-transformers: " + " + ".join(parts) + tail

    def pool(self, h: torch.Tensor, mask: torch.Tensor, last: bool) -> torch.Tensor:
        """h [B, T, H] (float32), mask [B, T] (the attention mask) -> [B, H'] as the folder's modules compute it;
        Dense and Normalize only when ``last`` (``hidden_states[-1]``, what they were trained on)."""
        m = mask.to(h.dtype).unsqueeze(-1)  # [B, T, 1]
        if self.mode == "cls":
            first = mask.to(torch.int).argmax(dim=1)  # the first attended position (0 with right padding)
            out = h[torch.arange(h.shape[0], device=h.device), first]
        elif self.mode == "max":
            out = h.masked_fill(m == 0, float("-inf")).max(dim=1).values
        else:
            total = (h * m).sum(dim=1)
            count = torch.clamp(m.sum(dim=1), min=1e-9)
            out = total / (count if self.mode == "mean" else torch.sqrt(count))
        if last:
            for dense in self.dense:
                out = dense(out)
            if self.normalize:
                out = torch.nn.functional.normalize(out, p=2, dim=1)
        return out


def _kind(module_type: str) -> str:
    return str(module_type).rsplit(".", 1)[-1]


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _pooling(config: dict, out: SentencePipeline) -> None:
    modes = pooling_modes(config) or ["mean"]
    usable = [m for m in modes if m in POOLING_MODES]
    if len(modes) > 1:
        out.ignored.append(f"Pooling modes {modes[1:]} concatenated after {modes[0]!r}")
    if modes[0] not in POOLING_MODES:
        out.ignored.append(f"Pooling mode {modes[0]!r} (pooled with mean instead)")
    out.mode = usable[0] if usable and usable[0] == modes[0] else "mean"
    if config.get("include_prompt") is False:
        out.ignored.append("Pooling include_prompt=false (prompt tokens are pooled)")


def _dense(folder: Path, config: dict, width: int, out: SentencePipeline) -> int:
    from safetensors.torch import load_file

    activation = _kind(config.get("activation_function", "torch.nn.modules.activation.Tanh"))
    weights = folder / "model.safetensors"
    if not weights.is_file():
        out.ignored.append(f"{folder.name}: Dense weights only as a pickle (xeval reads safetensors only)")
        return width
    if activation not in _ACTIVATIONS:
        out.ignored.append(f"{folder.name}: Dense activation {activation}")
        return width
    state = load_file(str(weights))
    weight, bias = state.get("linear.weight"), state.get("linear.bias")
    if weight is None or weight.shape[1] != width:
        out.ignored.append(f"{folder.name}: Dense weights do not fit the {width}-wide pooled vector")
        return width
    if weight.shape[0] != width:
        # the probes keep one width across layers; a Dense that changes it cannot join a layer sweep
        out.ignored.append(f"{folder.name}: Dense({weight.shape[1]}->{weight.shape[0]}) changes the width")
        return width
    out.dense.append(Dense(weight.float(), None if bias is None else bias.float(), activation))
    return int(weight.shape[0])


def read_pipeline(folder: str | Path, hidden_size: int) -> SentencePipeline | None:
    """The folder's sentence pipeline, or None when it is no sentence-transformers folder (no ``modules.json``)."""
    folder = Path(folder)
    modules = _read(folder / "modules.json")
    if not isinstance(modules, list) or not modules:
        return None
    bert = _read(folder / "sentence_bert_config.json")
    out = SentencePipeline(max_seq_length=bert.get("max_seq_length"), do_lower_case=bool(bert.get("do_lower_case")))
    st_config = _read(folder / "config_sentence_transformers.json")
    prompts = st_config.get("prompts") if isinstance(st_config, dict) else None
    if isinstance(prompts, dict):
        out.prompts = {str(k): v for k, v in prompts.items() if isinstance(v, str)}
        name = st_config.get("default_prompt_name")
        out.default_prompt_name = name if isinstance(name, str) else None
    width = hidden_size
    for entry in sorted(modules, key=lambda e: e.get("idx", 0)):
        kind, path = _kind(entry.get("type", "")), folder / entry.get("path", "")
        if kind == "Transformer":
            if entry.get("path", "") not in ("", "."):
                out.ignored.append(f"Transformer in {entry.get('path')}/ (xeval reads the folder's own weights)")
        elif kind == "Pooling":
            _pooling(_read(path / "config.json"), out)
        elif kind == "Dense":
            width = _dense(path, _read(path / "config.json"), width, out)
        elif kind == "Normalize":
            out.normalize = True
        else:
            out.ignored.append(f"module {kind} ({entry.get('path', '')})")
    return out
