"""VECO 2.0's multi-granularity contrast on translation pairs, each side encoded on its own (clean, unmasked):

- ``SequenceContrast``: the pair's two sentence vectors are positives, the other pairs of the *global* batch are
  negatives (gathered over ranks with gradients; InfoNCE in both directions, temperature t);
- ``TokenContrast``: word pairs that a bilingual dictionary (MUSE) says translate each other inside the pair are
  positives; the other words of the partner sentence are the negatives (InfoNCE in both directions). A word's vector
  is the mean of its pieces' hidden states (a bare ``▁`` piece, SentencePiece's lone word boundary, never counts).
  ``concat: true`` encodes the pair as one bilingual instance ``<s> A </s></s> B </s>`` (the paper's description)
  instead of reading the sides' separate passes; ``synonyms: true`` widens each word's translations by the other
  translations of the words that share one (two hops through the dictionary: the stand-in for the paper's
  thesaurus).

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
    concat_pairs,
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


def units(pieces: list[str], by_piece: bool) -> list[tuple[str, list[int]]]:
    """Every word (or, ``by_piece``, every piece) of one side as (normalised text, its piece indices); the text is
    "" where the word cannot be matched (a byte-fallback piece, only punctuation). Bare ``▁`` pieces belong to no
    word: they carry no meaning of their own and would pull every word vector towards the same point."""
    out: list[tuple[str, list[int]]] = []
    for i, p in enumerate(pieces):
        if p == SPACE:  # a lone word boundary: the next piece starts the word
            out.append(("", []))
            continue
        if by_piece or p.startswith(SPACE) or not out:
            out.append((p, [i]))
        else:
            text, idx = out[-1]
            out[-1] = (text + p, [*idx, i])
    words = []
    for text, idx in out:
        if idx:
            words.append(("" if "<0x" in text else _norm(text), idx))
    return words


def find_links(src_units, tgt_units, translations: dict[str, set[str]], max_links: int = 16) -> list[tuple[int, int]]:
    """(i, j) word indices of dictionary translation pairs inside one pair (``units`` of each side), unambiguous
    ones only: the source word occurs once and exactly one target word matches one of its translations."""
    src_count: dict[str, int] = {}
    for w, _ in src_units:
        src_count[w] = src_count.get(w, 0) + 1
    links, used = [], set()
    for i, (w, _) in enumerate(src_units):
        cands = translations.get(w) if w else None
        if not cands or src_count[w] > 1:
            continue
        matches = [j for j, (t, _) in enumerate(tgt_units) if t and t in cands]
        if len(matches) == 1 and matches[0] not in used:
            links.append((i, matches[0]))
            used.add(matches[0])
            if len(links) >= max_links:
                break
    return links


def word_vectors(h: torch.Tensor, word_of: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of each word's pieces: h (b, T, C), word_of (b, T) word index per position (-1: none)
    -> vectors (b, W, C) and valid (b, W)."""
    # encode_pairs pads both sides of a pair batch to the longer one: positions past this side's own length are
    # padding (no word), so the side's map covers only a prefix of h.
    h = h[:, : word_of.shape[1]]
    W = int(word_of.max()) + 1 if word_of.numel() else 0
    onehot = F.one_hot(word_of.clamp(min=0), max(W, 1)).to(h.dtype) * (word_of >= 0)[..., None].to(h.dtype)
    counts = onehot.sum(1)  # (b, W)
    vec = onehot.transpose(1, 2) @ h / counts.clamp(min=1)[..., None]  # (b, W, C)
    return vec, counts > 0


def expand_synonyms(table: dict[str, set[str]]) -> dict[str, set[str]]:
    """w -> the translations of every word that shares a translation with w (w's own included)."""
    reverse = _reverse(table)
    return {w: set().union(*(table[w2] for t in ts for w2 in reverse[t])) for w, ts in table.items()}


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
        h = encode_by_length(owner.encoder, ids, mask, layer, ctx.pair_buckets)  # (2B, T, C)
        B = a.shape[0]
        ctx.cache[key] = (h[:B], ids[:B], h[B:], ids[B:])
    return ctx.cache[key]


def encode_by_length(encoder, ids: torch.Tensor, mask: torch.Tensor, layer: int, buckets: int) -> torch.Tensor:
    """Hidden states (N, T, C) at ``layer`` of right-padded rows ids / mask (N, T), encoded in ``buckets`` groups of
    rows sorted by length, each cut to its own longest row: translation sides vary in length (most are far below
    ``pair_max_side``), so one batch padded to its longest row spends most of its work on padding. Padding is
    masked, so every real position gets the same value as in one pass; padded positions come back as zeros."""
    if buckets <= 1:
        return encoder(ids, mask, exit_layer=layer).last_hidden_state
    lengths = mask.sum(1)  # (N,)
    order = torch.argsort(lengths, stable=True)
    parts = []
    for rows in order.tensor_split(min(buckets, len(order))):
        t = max(int(lengths[rows].max()), 1)
        h = encoder(ids[rows, :t], mask[rows, :t], exit_layer=layer).last_hidden_state  # (n, t, C)
        parts.append(F.pad(h, (0, 0, 0, ids.shape[1] - t)))
    return torch.cat(parts)[torch.argsort(order)]  # back to the rows' own order


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
        self.concat = bool(cfg.get("concat", False))
        self.pieces = pieces
        self.reverse = {k: _reverse(d) for k, d in dictionaries.items()}
        if cfg.get("synonyms", False):
            dictionaries = {k: expand_synonyms(d) for k, d in dictionaries.items()}
            self.reverse = {k: expand_synonyms(d) for k, d in self.reverse.items()}
        self.dictionaries = dictionaries  # dictionaries["en-de"]: en word -> {de words}

    def words_and_links(self, src: list[int], tgt: list[int], key: str, swapped: bool):
        """(source units, target units, links) of one pair; links are word indices."""
        la, lb = key.split("-")
        if swapped:
            la, lb = lb, la
        su = units([self.pieces[i] for i in src], la in NO_SPACE_LANGS)
        tu = units([self.pieces[i] for i in tgt], lb in NO_SPACE_LANGS)
        table = self.dictionaries.get(key) if not swapped else self.reverse.get(key)
        return su, tu, find_links(su, tu, table, self.max_links) if table else []

    def coverage(self, pairs: dict[str, list[tuple[str, str]]], tokenizer, n: int = 200) -> dict[str, dict]:
        """Per pair key, on its first ``n`` pairs: dictionary links per pair and the share of pairs with a link."""
        out = {}
        for key, rows in pairs.items():
            rows = rows[:n]
            if not rows or key not in self.dictionaries:
                continue
            a = tokenizer.encode_batch([r[0] for r in rows], add_special_tokens=False)
            b = tokenizer.encode_batch([r[1] for r in rows], add_special_tokens=False)
            counts = [len(self.words_and_links(x.ids, y.ids, key, False)[2]) for x, y in zip(a, b)]
            out[key] = {"links_per_pair": sum(counts) / len(counts), "linked": sum(c > 0 for c in counts) / len(counts)}
        return out

    def prepare(self, batch, gen: torch.Generator) -> dict:
        K = self.max_links
        rows = [self.words_and_links(a, b, k, sw) for a, b, k, sw in zip(batch.src, batch.tgt, batch.keys, batch.swapped)]
        links = torch.full((len(rows), K, 2), -1, dtype=torch.long)
        if self.concat:  # <s> A </s></s> B </s>: A's pieces from position 1, B's after A and three specials
            ids, _ = concat_pairs(batch, self.tokens)
            out = {"pair_ids": ids}
            offsets = [(1, len(a) + 3) for a in batch.src]
            shape_s = shape_t = ids.shape
        else:  # each side <s> X </s> on its own (the pass seqcl reads too)
            src, _ = single_side(batch.src, self.tokens)
            tgt, _ = single_side(batch.tgt, self.tokens)
            out = {"src_ids": src, "tgt_ids": tgt}
            offsets = [(1, 1)] * len(rows)
            shape_s, shape_t = src.shape, tgt.shape
        word_s, word_t = torch.full(shape_s, -1, dtype=torch.long), torch.full(shape_t, -1, dtype=torch.long)
        for r, ((su, tu, ls), (off_s, off_t)) in enumerate(zip(rows, offsets)):
            for w, (_, idx) in enumerate(su):
                word_s[r, [off_s + i for i in idx]] = w
            for w, (_, idx) in enumerate(tu):
                word_t[r, [off_t + j for j in idx]] = w
            if ls:
                links[r, : len(ls)] = torch.tensor(ls)
        return {**out, "word_src": word_s, "word_tgt": word_t, "links": links, "n_total": (links[..., 0] >= 0).sum()}

    def hidden(self, inputs: dict, owner, ctx: StepContext):
        if not self.concat:
            hs, _, ht, _ = encode_pairs(inputs, owner, ctx, self.layer)
            return hs, ht
        key = ("pairs-concat", self.layer)
        if key not in ctx.cache:
            ids = inputs["pair_ids"]
            ctx.cache[key] = owner.encoder(ids, (ids != self.tokens.pad).long(), exit_layer=self.layer).last_hidden_state
        return ctx.cache[key], ctx.cache[key]

    def forward(self, inputs: dict, owner, ctx: StepContext):
        hs, ht = self.hidden(inputs, owner, ctx)  # (b, T, C) each (the same tensor for a concatenated pair)
        links = inputs["links"]  # (b, K, 2) word indices
        b_idx, k_idx = (links[..., 0] >= 0).nonzero(as_tuple=True)
        if len(b_idx) == 0:
            zero = hs.sum() * 0.0
            return zero, {"tokcl": zero.detach(), "tokcl_acc": zero.detach(), "tokcl_links": 0.0}  # same keys
        i, j = links[b_idx, k_idx, 0], links[b_idx, k_idx, 1]  # (N,)
        vs, valid_s = word_vectors(hs.float(), inputs["word_src"])  # (b, Ws, C), (b, Ws)
        vt, valid_t = word_vectors(ht.float(), inputs["word_tgt"])
        vs, vt = F.normalize(vs, dim=-1), F.normalize(vt, dim=-1)
        # source word i against every word of its partner target sentence; positive = j (and the reverse)
        logit_st = torch.einsum("nc,nwc->nw", vs[b_idx, i], vt[b_idx]) / self.temperature  # (N, Wt)
        logit_st = logit_st.masked_fill(~valid_t[b_idx], float("-inf"))
        logit_ts = torch.einsum("nc,nwc->nw", vt[b_idx, j], vs[b_idx]) / self.temperature  # (N, Ws)
        logit_ts = logit_ts.masked_fill(~valid_s[b_idx], float("-inf"))
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
