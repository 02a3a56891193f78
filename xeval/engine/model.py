"""The engine's Transformer encoder, readable top to bottom (in the spirit of nanoGPT's model.py).

One config dataclass (``XevalConfig``; in transformers 5 every ``PreTrainedConfig`` is a dataclass), attention
through ``F.scaled_dot_product_attention``, optional relative position bias -- plain (T5-style buckets) or the
*gated* relative position bias of XLM-E / WavLM:

    r_ij = d + g_u * d + (1 - g_u) * w * g_r * d,   g_u = sigmoid(q_i . u),  g_r = sigmoid(q_i . v)

with d = a learned bias per (head, bucket(j - i)), u and v per-head vectors, w a per-head scalar. The bias r is
added to the attention logits. When the gates saturate (g_u -> 0, g_r -> 0) r reduces to the plain bias d.

``XevalModel`` is a ``transformers.PreTrainedModel``: ``AutoModel.from_pretrained(dir)`` loads it once
``xeval.engine`` has been imported, and ``hidden_states`` follow Hugging Face's convention (``hidden_states[0]`` =
embedding output, ``hidden_states[k]`` = output of layer k, the last entry equals ``last_hidden_state``).
Heads used only for pre-training (``MLMHead``) live here too but are never part of the saved encoder.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub.dataclasses import strict
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import PreTrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutput

from xeval.engine.dropout import dropout as sfc64_dropout


@strict
class XevalConfig(PreTrainedConfig):
    """Shape and options of the encoder. Defaults = the ``tiny`` size (4 layers x 256, 16k vocabulary)."""

    model_type = "xeval"

    vocab_size: int = 16000
    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 1024
    hidden_act: str = "gelu"
    hidden_dropout_prob: float | int = 0.1
    attention_probs_dropout_prob: float | int = 0.1
    max_position_embeddings: int = 512
    position_embedding: str = "absolute"  # "absolute" (learned, like BERT/XLM-R) | "none"
    relative_attention: str = "none"  # "none" | "plain" (bucketed bias d) | "gated" (XLM-E)
    relative_buckets: int = 32
    relative_max_distance: int = 128
    pre_norm: bool = False  # False: post-LN like BERT / XLM-R; True: pre-LN with a final LayerNorm
    bias: bool = True  # biases in Linear and LayerNorm layers
    layer_norm_eps: float = 1e-5
    initializer_range: float = 0.02
    pad_token_id: int | None = 1  # XLM-R ids: <s>=0 <pad>=1 </s>=2 <unk>=3, <mask> last
    bos_token_id: int | None = 0
    eos_token_id: int | None = 2
    tie_word_embeddings: bool = True
    languages: list[str] | None = None  # XLM's language embeddings (one learned vector per language, added to every
    # token of that language) when set; the trainer fills it from the corpora (model.language_embeddings: true).
    # Callers that pass no language_ids (xeval's Encoder, AutoModel users) get no language vector at all

    def check(self) -> None:
        """Raise ValueError on inconsistent options (the trainer turns it into a ConfigError)."""
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} not divisible by heads {self.num_attention_heads}")
        if self.position_embedding not in ("absolute", "none"):
            raise ValueError(f"position_embedding must be absolute|none, got {self.position_embedding!r}")
        if self.relative_attention not in ("none", "plain", "gated"):
            raise ValueError(f"relative_attention must be none|plain|gated, got {self.relative_attention!r}")
        if self.hidden_act not in _ACTIVATIONS:
            raise ValueError(f"hidden_act must be one of {sorted(_ACTIVATIONS)}, got {self.hidden_act!r}")


_ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


def relative_bucket(relative: torch.Tensor, num_buckets: int, max_distance: int) -> torch.Tensor:
    """T5's bidirectional bucketing of j - i: half the buckets per direction, exact below num_buckets/4,
    logarithmic up to max_distance, everything further shares the last bucket."""
    num_buckets //= 2
    bucket = (relative > 0).long() * num_buckets
    n = relative.abs()
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (
        torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).long()
    large = large.clamp(max=num_buckets - 1)
    return bucket + torch.where(is_small, n, large)


class RelativePositionBias(nn.Module):
    """d: one learned scalar per (head, bucket); shared by all layers (as in T5 and XLM-E), gates are per layer."""

    def __init__(self, config: XevalConfig):
        super().__init__()
        self.num_buckets = config.relative_buckets
        self.max_distance = config.relative_max_distance
        # built from zeros, drawing nothing from the global stream; ``_init_weights`` fills it (``bias_generator``)
        zeros = torch.zeros(config.relative_buckets, config.num_attention_heads)
        self.table = nn.Embedding(config.relative_buckets, config.num_attention_heads, _weight=zeros)
        self.table.relative_table = True

    def forward(self, length: int) -> torch.Tensor:
        pos = torch.arange(length, device=self.table.weight.device)
        buckets = relative_bucket(pos[None, :] - pos[:, None], self.num_buckets, self.max_distance)  # (T, T)
        return self.table(buckets).permute(2, 0, 1)  # (H, T, T)


class SelfAttention(nn.Module):
    def __init__(self, config: XevalConfig):
        super().__init__()
        d, self.n_head = config.hidden_size, config.num_attention_heads
        self.head_dim = d // self.n_head
        self.qkv = nn.Linear(d, 3 * d, bias=config.bias)
        self.out = nn.Linear(d, d, bias=config.bias)
        self.dropout = config.attention_probs_dropout_prob
        self.dropout_rng = "torch"  # "sfc64": the attention probabilities' masks from xeval.engine.dropout
        self.gated = config.relative_attention == "gated"
        if self.gated:
            self.gate_u = nn.Parameter(torch.zeros(self.n_head, self.head_dim))  # update gate direction
            self.gate_v = nn.Parameter(torch.zeros(self.n_head, self.head_dim))  # reset gate direction
            self.gate_w = nn.Parameter(torch.ones(self.n_head))  # per-head scale of the reset branch

    def gated_bias(self, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """r = d + g_u*d + (1-g_u)*w*g_r*d.  q: (B, H, T, Dh) projected queries, d: (H, T, T) -> (B, H, T, T)."""
        g_u = torch.sigmoid(torch.einsum("bhtd,hd->bht", q, self.gate_u.to(q.dtype)))[..., None]  # (B, H, T, 1)
        g_r = torch.sigmoid(torch.einsum("bhtd,hd->bht", q, self.gate_v.to(q.dtype)))[..., None]
        w = self.gate_w.to(q.dtype)[None, :, None, None]  # (1, H, 1, 1)
        d = d.to(q.dtype)[None]  # (1, H, T, T)
        return d + g_u * d + (1 - g_u) * w * g_r * d

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, rel: torch.Tensor | None) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh)
        bias = None
        if rel is not None:  # (H, T, T)
            bias = self.gated_bias(q, rel) if self.gated else rel.to(q.dtype)[None]
        if mask is not None:  # (B, 1, 1, T) additive: 0 on tokens, very negative on padding keys
            bias = mask if bias is None else bias + mask
        p = self.dropout if self.training else 0.0
        if p > 0.0 and self.dropout_rng != "torch" and x.device.type == "cpu":
            # SDPA's math path written out, so its dropout can take SFC64 masks (xeval.engine.dropout)
            w = torch.matmul(q, k.transpose(-2, -1)) * self.head_dim**-0.5  # (B, H, T, T)
            w = torch.softmax(w if bias is None else w + bias, dim=-1)
            y = torch.matmul(sfc64_dropout(w, p), v)  # (B, H, T, Dh)
        elif self.training and p == 0.0 and x.device.type == "cpu":
            # Same attention through SDPA's math path (batched products): on a CPU the fused (flash) kernel's
            # backward is the slow part of a training step -- 51 % of a 12 x 384 step, while the math path runs
            # forward + backward 1.7x faster there (docs/measurements.md). Inference keeps the fused kernel.
            with sdpa_kernel(SDPBackend.MATH):
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # (B, H, T, Dh)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)  # (B, H, T, Dh)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, config: XevalConfig):
        super().__init__()
        self.fc = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.bias)
        self.proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.bias)
        self.act = _ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.act(self.fc(x)))


class Block(nn.Module):
    def __init__(self, config: XevalConfig):
        super().__init__()
        self.pre_norm = config.pre_norm
        self.attn = SelfAttention(config)
        self.ln_attn = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.bias)
        self.ffn = FeedForward(config)
        self.ln_ffn = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.bias)
        self.drop = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, mask, rel):  # x: (B, T, C)
        if self.pre_norm:
            x = x + self.drop(self.attn(self.ln_attn(x), mask, rel))
            return x + self.drop(self.ffn(self.ln_ffn(x)))
        x = self.ln_attn(x + self.drop(self.attn(x, mask, rel)))
        return self.ln_ffn(x + self.drop(self.ffn(x)))


class Embeddings(nn.Module):
    def __init__(self, config: XevalConfig):
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions = (
            nn.Embedding(config.max_position_embeddings, config.hidden_size)
            if config.position_embedding == "absolute"
            else None
        )
        self.languages = nn.Embedding(len(config.languages), config.hidden_size) if config.languages else None
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.bias)
        self.drop = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None,
                language_ids: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """(B, T) -> (B, T, C). ``position_ids`` (B, T) default 0..T-1 (XLM's TLM restarts them per side);
        ``language_ids`` (B, T) add the language embeddings where the model has them."""
        x = self.tokens(input_ids)
        if self.positions is not None:
            if position_ids is None:
                x = x + self.positions(torch.arange(input_ids.shape[1], device=input_ids.device))[None]
            else:
                x = x + self.positions(position_ids)
        if self.languages is not None and language_ids is not None:
            x = x + self.languages(language_ids)
        return self.drop(self.norm(x))


BIAS_SEED_SALT = 0x5EED_B1A5  # the relative position bias's stream: the global seed plus this (and its model's)


class XevalPreTrainedModel(PreTrainedModel):
    config_class = XevalConfig
    config: XevalConfig
    base_model_prefix = "xeval"
    main_input_name = "input_ids"
    _supports_sdpa = True

    bias_stream = 0  # which model of a run this is, for the bias's stream (ELECTRA's generator: 1)

    def initialize_weights(self):
        self._bias_rngs = {}  # a re-initialisation after torch.manual_seed(s) draws the bias again as the first did
        super().initialize_weights()

    def _init_weights(self, module):
        std = self.config.initializer_range
        if getattr(module, "relative_table", False):
            init.normal_(module.weight, mean=0.0, std=std, generator=self.bias_generator(module.weight))
            return
        super()._init_weights(module)  # normal(0, initializer_range) for Linear/Embedding, ones/zeros for norms
        if isinstance(module, SelfAttention) and module.gated:
            init.normal_(module.gate_u, mean=0.0, std=std, generator=self.bias_generator(module.gate_u))
            init.normal_(module.gate_v, mean=0.0, std=std, generator=self.bias_generator(module.gate_v))
            init.ones_(module.gate_w)
        if isinstance(module, nn.LayerNorm):  # LayerNorm's class name is not matched by the generic rule
            init.ones_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)

    def bias_generator(self, tensor: torch.Tensor) -> torch.Generator:
        """The relative position bias's own random stream (table and gates), seeded from the global seed
        (``torch.manual_seed``, i.e. ``train.seed``) and ``bias_stream``, never drawing from the global stream: a
        model with the bias and one without it start from the same weights in everything they share, encoder and
        heads alike -- the controlled pair that XLM-E's ablation of the bias needs. One a device (meta: the CPU's)."""
        device = torch.device("cpu") if tensor.device.type == "meta" else tensor.device
        rngs = self.__dict__.setdefault("_bias_rngs", {})
        if device not in rngs:
            seed = (torch.initial_seed() + BIAS_SEED_SALT + 7919 * self.bias_stream) % 2**63
            rngs[device] = torch.Generator(device=device).manual_seed(seed)
        return rngs[device]


class XevalModel(XevalPreTrainedModel):
    """The encoder: embeddings, ``num_hidden_layers`` blocks, (pre-LN only) a final LayerNorm."""

    def __init__(self, config: XevalConfig, bias_stream: int = 0):
        super().__init__(config)
        config.check()
        self.bias_stream = bias_stream
        self.embeddings = Embeddings(config)
        self.relative = RelativePositionBias(config) if config.relative_attention != "none" else None
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.final_norm = (
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.bias) if config.pre_norm else None
        )
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.tokens

    def set_input_embeddings(self, value):
        self.embeddings.tokens = value

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        exit_layer: int | None = None,
        position_ids: torch.Tensor | None = None,
        language_ids: torch.Tensor | None = None,
        **kwargs,  # token_type_ids etc. from generic callers are accepted and ignored
    ):
        """input_ids, attention_mask: (B, T). ``exit_layer`` k stops after layer k (the engine's contrast layers
        need no deeper layers); the returned ``last_hidden_state`` is then layer k's output."""
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        B, T = input_ids.shape
        x = self.embeddings(input_ids, position_ids, language_ids)  # (B, T, C)
        mask = None
        # no padding -> no mask, so SDPA can take its fastest path (the check is skipped inside torch.compile,
        # where a data-dependent branch would break the graph)
        if attention_mask is not None and (torch.compiler.is_compiling() or not bool(attention_mask.all())):
            keep = attention_mask[:, None, None, :].bool()  # (B, 1, 1, T)
            mask = torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, torch.finfo(x.dtype).min)
        rel = self.relative(T) if self.relative is not None else None  # (H, T, T)
        n_layers = len(self.layers) if exit_layer is None else exit_layer
        hidden = [x] if output_hidden_states else None
        for i, block in enumerate(self.layers[:n_layers]):
            x = block(x, mask, rel)
            if self.final_norm is not None and i == len(self.layers) - 1:
                x = self.final_norm(x)
            if hidden is not None:
                hidden.append(x)
        if return_dict is False:
            return (x, tuple(hidden)) if hidden is not None else (x,)
        return BaseModelOutput(last_hidden_state=x, hidden_states=tuple(hidden) if hidden is not None else None)


class MLMHead(nn.Module):
    """dense -> GELU -> LayerNorm -> tied decoder, applied only to the gathered masked positions (N, C) -> (N, V):
    the vocabulary projection is the most expensive matmul of a small model, and ~85 % of its rows would be
    thrown away if it ran over every position."""

    def __init__(self, config: XevalConfig, embedding: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.bias)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.embedding = [embedding]  # a list, so the tied weight is not registered (and saved) twice
        nn.init.normal_(self.dense.weight, std=config.initializer_range)
        if self.dense.bias is not None:
            nn.init.zeros_(self.dense.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (N, C) -> (N, V)
        h = self.norm(F.gelu(self.dense(h)))
        return F.linear(h, self.embedding[0].weight, self.bias)
