"""VECO 2.0's multi-granularity contrast on translation pairs, each side encoded on its own (clean, unmasked):

- ``SequenceContrast``: the pair's two sentence vectors are positives, the other pairs of the (per-rank) batch are
  negatives (InfoNCE in both directions, temperature t);
- ``TokenContrast``: token pairs that a bilingual dictionary (MUSE) says translate each other inside the pair are
  positives; the other tokens of the partner sentence are the negatives (InfoNCE in both directions).

Both read the same forward pass (cached in the step context), so VECO 2.0 costs one encoder pass per side.
Dictionary links are found on the CPU in ``prepare`` (``find_links``): a source word with translations in the
dictionary is linked to the single target word that matches one of them (ambiguous or repeated words are skipped);
for languages written without spaces (zh, ja, th) single subword pieces count as words.
"""

from __future__ import annotations

import unicodedata

import torch
import torch.nn.functional as F

from xeval.engine.objectives.base import (
    Objective,
    StepContext,
    gather_with_grad,
    pool,
    resolve_layer,
    single_side,
)

SPACE = "\u2581"
NO_SPACE_LANGS = {"zh", "ja", "th"}


def _norm(text: str) -> str:
    text = text.replace(SPACE, "").casefold()
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith(("P", "S"))).strip()


def units(pieces: list[str], by_piece: bool) -> list[tuple[str, int]]:
    """Words (or single pieces) of one side as (normalised text, index of its first piece)."""
    out: list[tuple[str, int]] = []
    word, start = "", -1
    for i, p in enumerate(pieces):
        if p.startswith("<0x"):  # a byte-fallback piece cannot be read alone: the word becomes unmatchable
            word = "\0"
            continue
        if by_piece:
            out.append((_norm(p), i))
            continue
        if p.startswith(SPACE) or start < 0:
            if start >= 0:
                out.append((_norm(word) if "\0" not in word else "", start))
            word, start = p, i
        else:
            word += p
    if not by_piece and start >= 0:
        out.append((_norm(word) if "\0" not in word else "", start))
    return [(w, i) for w, i in out if w]


def find_links(src_pieces, tgt_pieces, translations: dict[str, set[str]], src_by_piece=False, tgt_by_piece=False,
               max_links: int = 16) -> list[tuple[int, int]]:  # fmt: skip
    """(i, j) piece indices of dictionary translation pairs inside one pair, unambiguous ones only."""
    src_units, tgt_units = units(src_pieces, src_by_piece), units(tgt_pieces, tgt_by_piece)
    src_count: dict[str, int] = {}
    for w, _ in src_units:
        src_count[w] = src_count.get(w, 0) + 1
    links, used = [], set()
    for w, i in src_units:
        cands = translations.get(w)
        if not cands or src_count[w] > 1:
            continue
        matches = [j for t, j in tgt_units if t in cands]
        if len(matches) == 1 and matches[0] not in used:
            links.append((i, matches[0]))
            used.add(matches[0])
            if len(links) >= max_links:
                break
    return links


def encode_pairs(inputs: dict, owner, ctx: StepContext, layer: int):
    """Both sides in one batch (2B rows, padded to one length), once per step and layer (cached in ``ctx``).
    Returns (h_src, ids_src, h_tgt, ids_tgt): hidden states (B, T, C) at ``layer`` and the padded ids (B, T)."""
    key = ("pairs-clean", layer)
    if key not in ctx.cache:
        pad_id = owner.encoder.config.pad_token_id
        a, b = inputs["src_ids"], inputs["tgt_ids"]
        T = max(a.shape[1], b.shape[1])
        ids = torch.cat([F.pad(a, (0, T - a.shape[1]), value=pad_id), F.pad(b, (0, T - b.shape[1]), value=pad_id)])
        mask = (ids != pad_id).long()  # (2B, T)
        h = owner.encoder(ids, mask, exit_layer=layer).last_hidden_state  # (2B, T, C)
        B = a.shape[0]
        ctx.cache[key] = (h[:B], ids[:B], h[B:], ids[B:])
    return ctx.cache[key]


class SequenceContrast(Objective):
    data = "pairs"
    name = "seqcl"

    def __init__(self, cfg: dict, tokens, encoder):
        super().__init__(cfg, tokens)
        depth = encoder.config.num_hidden_layers
        self.layer = resolve_layer(cfg.get("layer", depth), depth, "objectives.seqcl.layer")
        self.temperature = float(cfg.get("temperature", 0.05))
        self.pooling = cfg.get("pooling", "mean")

    def prepare(self, batch, gen: torch.Generator) -> dict:
        src, _ = single_side(batch.src, self.tokens)
        tgt, _ = single_side(batch.tgt, self.tokens)
        return {"src_ids": src, "tgt_ids": tgt}

    def forward(self, inputs: dict, owner, ctx: StepContext):
        hs, ids_s, ht, ids_t = encode_pairs(inputs, owner, ctx, self.layer)
        pad_id = owner.encoder.config.pad_token_id
        ms, mt = (ids_s != pad_id).long(), (ids_t != pad_id).long()
        q = F.normalize(pool(hs, ms, self.pooling).float(), dim=-1)  # (b, C): this rank's rows
        k = F.normalize(pool(ht, mt, self.pooling).float(), dim=-1)
        # negatives = every pair of the *global* batch, as in one process (gathered with gradients)
        q_all, k_all = gather_with_grad(q), gather_with_grad(k)  # (B, C), rank order = global row order
        target = ctx.rank * len(q) + torch.arange(len(q), device=q.device)  # this rank's rows in the global batch
        logits = q @ k_all.T / self.temperature  # (b, B): source -> every target
        logits_t = k @ q_all.T / self.temperature  # (b, B): target -> every source
        # mean over the global batch, times world: DDP's gradient averaging then gives the 1-process gradient
        loss_sum = F.cross_entropy(logits, target, reduction="sum") + F.cross_entropy(logits_t, target, reduction="sum")
        loss = loss_sum / 2 * ctx.world / len(q_all)
        acc = (logits.argmax(-1) == target).float().mean()
        return loss, {"seqcl": loss.detach(), "seqcl_acc": acc.detach(), "tokens": int(ms.sum() + mt.sum())}


class TokenContrast(Objective):
    data = "pairs"
    name = "tokcl"
    summed_stats = ("tokcl_links",)

    def __init__(self, cfg: dict, tokens, encoder, pieces: list[str], dictionaries: dict[str, dict[str, set[str]]]):
        super().__init__(cfg, tokens)
        depth = encoder.config.num_hidden_layers
        self.layer = resolve_layer(cfg.get("layer", depth), depth, "objectives.tokcl.layer")
        self.temperature = float(cfg.get("temperature", 0.1))
        self.max_links = int(cfg.get("max_links", 16))
        self.pieces, self.dictionaries = pieces, dictionaries  # dictionaries["en-de"]: en word -> {de words}
        self.reverse = {k: _reverse(d) for k, d in dictionaries.items()}

    def links_of(self, batch) -> list[list[tuple[int, int]]]:
        out = []
        for a, b, key, swapped in zip(batch.src, batch.tgt, batch.keys, batch.swapped):
            la, lb = key.split("-")
            if swapped:
                la, lb = lb, la
            table = self.dictionaries.get(key) if not swapped else self.reverse.get(key)
            if not table:
                out.append([])
                continue
            links = find_links([self.pieces[i] for i in a], [self.pieces[i] for i in b], table,
                               la in NO_SPACE_LANGS, lb in NO_SPACE_LANGS, self.max_links)  # fmt: skip
            out.append([(i + 1, j + 1) for i, j in links])  # +1: the <s> in front of each side
        return out

    def prepare(self, batch, gen: torch.Generator) -> dict:
        src, _ = single_side(batch.src, self.tokens)
        tgt, _ = single_side(batch.tgt, self.tokens)
        links = self.links_of(batch)
        pos = torch.full((len(links), self.max_links, 2), -1, dtype=torch.long)
        for b, ls in enumerate(links):
            if ls:
                pos[b, : len(ls)] = torch.tensor(ls)
        return {"src_ids": src, "tgt_ids": tgt, "links": pos, "n_total": (pos[..., 0] >= 0).sum()}

    def forward(self, inputs: dict, owner, ctx: StepContext):
        hs, ids_s, ht, ids_t = encode_pairs(inputs, owner, ctx, self.layer)  # (B, T, C), (B, T)
        links = inputs["links"]  # (B, K, 2)
        b_idx, k_idx = (links[..., 0] >= 0).nonzero(as_tuple=True)
        if len(b_idx) == 0:
            zero = hs.sum() * 0.0
            return zero, {"tokcl": zero.detach(), "tokcl_acc": zero.detach(), "tokcl_links": 0.0}  # same keys
        i, j = links[b_idx, k_idx, 0], links[b_idx, k_idx, 1]  # (N,)
        hs_n, ht_n = F.normalize(hs.float(), dim=-1), F.normalize(ht.float(), dim=-1)
        special_s, special_t = self.tokens.special_mask(ids_s), self.tokens.special_mask(ids_t)  # (B, T) incl. pad
        # source token i against every token of its partner target sentence; positive = j
        logit_st = torch.einsum("nc,ntc->nt", hs_n[b_idx, i], ht_n[b_idx]) / self.temperature  # (N, T)
        logit_st = logit_st.masked_fill(special_t[b_idx], float("-inf"))
        logit_ts = torch.einsum("nc,ntc->nt", ht_n[b_idx, j], hs_n[b_idx]) / self.temperature
        logit_ts = logit_ts.masked_fill(special_s[b_idx], float("-inf"))
        loss_sum = F.cross_entropy(logit_st, j, reduction="sum") + F.cross_entropy(logit_ts, i, reduction="sum")
        loss = loss_sum / 2 * ctx.world / inputs["n_total"].clamp(min=1)
        # accuracy over the global links: this rank's hits * world / global links averages to it over ranks
        acc = (logit_st.argmax(-1) == j).float().sum() * ctx.world / inputs["n_total"].clamp(min=1)
        return loss, {"tokcl": loss.detach(), "tokcl_acc": acc.detach(), "tokcl_links": float(len(b_idx))}


def _reverse(table: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, bs in table.items():
        for b in bs:
            out.setdefault(b, set()).add(a)
    return out
