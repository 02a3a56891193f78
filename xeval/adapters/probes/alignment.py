"""Word alignment from subword representations, scored by AER, for every layer from one forward pass.

1. Each sentence of a pair is encoded on its own (default; SimAlign/awesome-align without fine-tuning), or the
   pair as one ``[CLS] src [SEP] tgt [SEP]`` sequence (``joint: true``). Special tokens are left out.
2. Similarity of a layer's subword states: cosine, sim [n_src_subwords, n_tgt_subwords].
3. Extraction, on subwords:
   - ``ot-emd``: exact optimal transport (``ot.emd``) with uniform marginals a = 1/n, b = 1/m and cost 1 − sim;
   - ``ot-sinkhorn``: entropic OT (``ot.sinkhorn``, log-stabilised, ε = ``epsilon``), same marginals and cost;
     both link (i, j) when the plan carries at least ``threshold`` of the smaller of the two masses it joins,
     π_ij ≥ τ·min(a_i, b_j), i.e. when π_ij/a_i (share of i's mass sent to j) or π_ij/b_j (share of j's mass
     coming from i) reaches τ;
   - ``argmax-inter``: SimAlign's "inter" (ArgMax): i-j when j is i's most similar and i is j's most similar.
4. Words: two words are linked when any of their subwords are (SimAlign's and awesome-align's rule).

An input prefix (``prefix``, e5's ``query: ``; ``xeval.adapters.probes.base``) goes before each sentence's words as
words of its own; its subwords are encoded and then left out like the special tokens.

AER (``xeval.metrics.aer``) against the gold (sure and possible links); the first extraction method is the
headline (``aer``, ``precision``, ``recall``); every method also gets ``aer_<method>`` etc. (``-`` → ``_``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from xeval.adapters.probes import base as probes
from xeval.adapters.probes.sinkhorn import sinkhorn_stabilized_many
from xeval.base.errors import ConfigError
from xeval.metrics.aer import score_alignment
from xeval.results.outcomes import Outcomes, example_id

METHODS = ("ot-emd", "ot-sinkhorn", "argmax-inter")
ALIGN_DEFAULTS = {
    "methods": list(METHODS),
    "epsilon": 0.05,  # Sinkhorn's entropic regularisation
    "threshold": 0.5,  # OT: share of mass a plan entry must carry to become a link
    "joint": False,  # encode each pair as one sequence
    "chunk": 64,  # sentence pairs encoded at a time (bounds memory: [L, subwords, H] per sentence)
}
EXTRA_OPTIONS = ALIGN_DEFAULTS  # options beyond probes.DEFAULTS (xeval.run.checks checks --set keys against them)


# --------------------------------------------------------------------------- extraction on one similarity matrix


def cosine_matrix(src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
    """src [..., n, H], tgt [..., m, H] -> cosine similarities float64 [..., n, m] (e.g. every layer at once)."""
    src = src / np.maximum(np.linalg.norm(src, axis=-1, keepdims=True), 1e-12)
    tgt = tgt / np.maximum(np.linalg.norm(tgt, axis=-1, keepdims=True), 1e-12)
    return np.matmul(src, np.swapaxes(tgt, -1, -2)).astype(np.float64)


def argmax_inter(sim: np.ndarray) -> np.ndarray:
    """SimAlign "inter": bool [n, m], True where j = argmax_j sim[i] and i = argmax_i sim[:, j]."""
    forward = np.zeros_like(sim, dtype=bool)
    forward[np.arange(sim.shape[0]), sim.argmax(axis=1)] = True
    backward = np.zeros_like(sim, dtype=bool)
    backward[sim.argmax(axis=0), np.arange(sim.shape[1])] = True
    return forward & backward


def ot_plan(sim: np.ndarray, method: str = "emd", epsilon: float = 0.05) -> np.ndarray:
    """Transport plan float64 [n, m] between uniform marginals with cost 1 − sim (exact or entropic)."""
    import ot

    n, m = sim.shape
    a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    cost = np.ascontiguousarray(1.0 - sim, dtype=np.float64)
    if method == "emd":
        return ot.emd(a, b, cost)
    if method == "sinkhorn":
        return ot.sinkhorn(a, b, cost, epsilon, method="sinkhorn_stabilized", numItermax=2000, stopThr=1e-9, warn=False)
    raise ValueError(f"unknown OT method {method!r}; expected 'emd' or 'sinkhorn'")


def plan_links(plan: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """bool [n, m]: π_ij ≥ τ·min(a_i, b_j) with a, b the plan's (uniform) row and column masses."""
    rows = plan.sum(axis=1, keepdims=True)  # a_i  [n, 1]
    cols = plan.sum(axis=0, keepdims=True)  # b_j  [1, m]
    return plan >= threshold * np.minimum(rows, cols) - 1e-12


def extract(sim: np.ndarray, method: str, epsilon: float = 0.05, threshold: float = 0.5) -> np.ndarray:
    """Subword links bool [n, m] by one of METHODS."""
    if sim.size == 0:
        return np.zeros(sim.shape, dtype=bool)
    if method == "argmax-inter":
        return argmax_inter(sim)
    if method == "ot-emd":
        return plan_links(ot_plan(sim, "emd"), threshold)
    if method == "ot-sinkhorn":
        return plan_links(ot_plan(sim, "sinkhorn", epsilon), threshold)
    raise ValueError(f"unknown alignment method {method!r}; expected one of {', '.join(METHODS)}")


def word_links(links: np.ndarray, src_words: list[int], tgt_words: list[int]) -> set[tuple[int, int]]:
    """Subword links bool [n, m] -> word links: words i, j are linked when any of their subwords are."""
    rows, cols = np.nonzero(links)
    return set(zip(np.asarray(src_words)[rows].tolist(), np.asarray(tgt_words)[cols].tolist()))


# --------------------------------------------------------------------------- encoding pairs


def separate_states(encoder, pairs, layers: list[int]) -> Iterator[tuple]:
    """Per pair: (src states [L, n, H], src word index per subword, tgt states [L, m, H], tgt word indices)."""
    src = encoder.word_piece_states([p.src_tokens for p in pairs], layers=layers)
    tgt = encoder.word_piece_states([p.tgt_tokens for p in pairs], layers=layers)
    for (s_states, s_words), (t_states, t_words) in zip(src, tgt):
        yield s_states, s_words, t_states, t_words


def joint_states(encoder, pairs, layers: list[int]) -> Iterator[tuple]:
    """Like ``separate_states``, with each pair encoded as one sequence (both sentences attend to each other)."""
    import torch

    with torch.inference_mode():
        enc = encoder.tokenizer([p.src_tokens for p in pairs], [p.tgt_tokens for p in pairs],
                                is_split_into_words=True, truncation=True, max_length=encoder.max_length,
                                padding=True, return_tensors="pt")
        states = encoder.forward(enc["input_ids"], enc["attention_mask"])
        stacked = torch.stack([states[k] for k in layers]).float().cpu().numpy()  # [L, B, T, H]
    for b in range(len(pairs)):
        words, sides = enc.word_ids(b), enc.sequence_ids(b)
        src_pos = [t for t, (w, s) in enumerate(zip(words, sides)) if w is not None and s == 0]
        tgt_pos = [t for t, (w, s) in enumerate(zip(words, sides)) if w is not None and s == 1]
        yield (stacked[:, b, src_pos], [words[t] for t in src_pos],
               stacked[:, b, tgt_pos], [words[t] for t in tgt_pos])


def drop_words(item: tuple, k: int) -> tuple:
    """One pair's (src states, src words, tgt states, tgt words) without the subwords of its first ``k`` words (a
    prefix), the word indices counted from the first word after them."""
    if not k:
        return item
    out = []
    for states, words in ((item[0], item[1]), (item[2], item[3])):
        keep = [t for t, w in enumerate(words) if w >= k]
        out += [states[:, keep], [words[t] - k for t in keep]]
    return tuple(out)


def argmax_inter_layers(sims: np.ndarray) -> np.ndarray:
    """``argmax_inter`` on every layer at once: sims [L, n, m] -> bool [L, n, m] (the same ties: first maximum)."""
    n, m = sims.shape[-2:]
    forward = sims.argmax(axis=-1)[..., :, None] == np.arange(m)  # [L, n, m]: j is i's most similar
    backward = sims.argmax(axis=-2)[..., None, :] == np.arange(n)[:, None]  # i is j's most similar
    return forward & backward


def extract_layers(sims: list[np.ndarray], method: str, epsilon: float = 0.05,
                   threshold: float = 0.5) -> list[np.ndarray]:
    """Subword links bool [L, n_k, m_k] for every sentence pair k of sims ([L, n_k, m_k] each), all layers at once.

    The same links as ``extract`` on each layer: argmax-inter is one tensor operation over the layers, Sinkhorn
    iterates every (pair, layer) problem of the list together (``xeval.adapters.probes.sinkhorn``), exact OT stays one
    network-simplex solve per layer (its plan is a vertex of the polytope; no batched solver gives the same one).
    """
    if method == "argmax-inter":
        return [argmax_inter_layers(s) if s.size else np.zeros(s.shape, dtype=bool) for s in sims]
    if method == "ot-sinkhorn":
        costs = [np.ascontiguousarray(1.0 - s[row], dtype=np.float64) for s in sims for row in range(len(s))]
        plans = iter(sinkhorn_stabilized_many(costs, epsilon, num_iter_max=2000, stop_thr=1e-9))
        return [np.stack([plan_links(next(plans), threshold) for _ in range(len(s))]).reshape(s.shape)
                for s in sims]
    if method in METHODS:
        return [np.stack([extract(s[row], method, epsilon, threshold) for row in range(len(s))]).reshape(s.shape)
                for s in sims]
    raise ValueError(f"unknown alignment method {method!r}; expected one of {', '.join(METHODS)}")


def align_layers(encoder, pairs, layers: list[int], options: dict) -> dict[int, dict[str, list[set]]]:
    """Predicted word links: {layer: {method: [links of pair k]}}, every layer from one forward pass per chunk and
    every layer's links from one extraction call per method and chunk."""
    methods = list(options["methods"])
    out = {layer: {m: [] for m in methods} for layer in layers}
    encode = joint_states if options["joint"] else separate_states
    chunk = int(options["chunk"])
    extra = (options.get("prefix") or "").split()  # the prefix's words, before each sentence's
    for start in range(0, len(pairs), chunk):
        batch = pairs[start : start + chunk]
        if extra:
            batch = [replace(p, src_tokens=extra + list(p.src_tokens), tgt_tokens=extra + list(p.tgt_tokens))
                     for p in batch]
        encoded = [drop_words(item, len(extra)) for item in encode(encoder, batch, layers)]
        sims = [cosine_matrix(s_states, t_states) for s_states, _, t_states, _ in encoded]  # [L, n, m] each
        for method in methods:
            links = extract_layers(sims, method, float(options["epsilon"]), float(options["threshold"]))
            for (_, s_words, _, t_words), pair_links in zip(encoded, links):
                for row, layer in enumerate(layers):
                    out[layer][method].append(word_links(pair_links[row], s_words, t_words))
    return out


def score_layers(pairs, predicted: dict[int, dict[str, list[set]]]) -> dict[int, dict[str, float]]:
    """{layer: metrics}: the first method's aer/precision/recall, and every method's under its own prefix."""
    gold = [(p.sure, p.possible) for p in pairs]
    out = {}
    for layer, by_method in predicted.items():
        metrics = {}
        for k, (method, links) in enumerate(by_method.items()):
            result = score_alignment(gold, links)
            if k == 0:
                metrics.update(result.as_metrics())
            metrics.update(result.as_metrics(prefix=method.replace("-", "_") + "_"))
        out[layer] = metrics
    return out


def alignment_outcomes(pairs, predicted: dict[str, list[set]]):
    """Per sentence pair: the link counts AER sums (for the headline method as ``aer`` and every method under its
    prefix), gold = sure links, prediction = the headline method's links (0-based ``i-j``)."""
    def links(found) -> str:
        return " ".join(f"{i}-{j}" for i, j in sorted(found))

    first = next(iter(predicted))
    out = Outcomes([example_id(p, k) for k, p in enumerate(pairs)], [links(p.sure) for p in pairs], [links(x) for x in predicted[first]])
    for k, (method, found) in enumerate(predicted.items()):
        counts = {"predicted_sure": [], "predicted_possible": [], "predicted": [], "sure": []}
        for p, pred in zip(pairs, found):
            pred = set(pred)
            counts["predicted"].append(len(pred))
            counts["sure"].append(len(p.sure))
            counts["predicted_sure"].append(len(pred & p.sure))
            counts["predicted_possible"].append(len(pred & (p.sure | p.possible)))
        if k == 0:
            out.add("aer", "aer", **counts)
        out.add(method.replace("-", "_") + "_aer", "aer", **counts)
    return out.with_inputs([[" ".join(p.src_tokens), " ".join(p.tgt_tokens)] for p in pairs])


def pharaoh(links: list[set]) -> str:
    """0-based ``i-j`` lines, as awesome-align and SimAlign write them."""
    return "".join(" ".join(f"{i}-{j}" for i, j in sorted(sentence)) + "\n" for sentence in links)


def run(card, langs, ctx) -> list:
    options = probes.probe_options(card, ctx, extra=ALIGN_DEFAULTS)
    for method in options["methods"]:
        if method not in METHODS:
            raise ConfigError(f"{card.name}: unknown alignment method {method!r}; expected one of {', '.join(METHODS)}")
    config = {
        "probe": "word_alignment",
        "methods": list(options["methods"]),
        "headline_method": options["methods"][0],
        "epsilon": float(options["epsilon"]),
        "threshold": float(options["threshold"]),
        "encoding": "joint pair" if options["joint"] else "each sentence separately",
        "similarity": "cosine of subword states (special tokens left out)",
        "marginals": "uniform",
        "cost": "1 - cosine",
        "subword_to_word": "any subword link links the words",
        "max_length": ctx.encoder.max_length,
        **probes.prefix_config(options),
    }

    def evaluate(lang, pairs, layers):
        predicted = align_layers(ctx.encoder, pairs, layers, options)
        scores = score_layers(pairs, predicted)
        for layer in layers:
            files = {f"{lang}.{method}.out": pharaoh(links) for method, links in predicted[layer].items()}
            yield probes.LayerResult(layer, scores[layer], len(pairs), files=files,
                                     outcomes=alignment_outcomes(pairs, predicted[layer]))

    return probes.sweep(card, langs, ctx, config, evaluate)
