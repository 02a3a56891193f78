"""Engine objectives: masking statistics, RTD labels and Gumbel-max sampling, the XLCO queue and key encoder,
dictionary links of the token contrast."""

from __future__ import annotations

import pytest
import torch

from xeval.base.errors import ConfigError
from xeval.engine.model import XevalConfig, XevalModel
from xeval.engine.objectives import PretrainModel, StepContext
from xeval.engine.objectives.base import TokenInfo, mask_tokens
from xeval.engine.objectives.contrast import find_links, units
from xeval.engine.objectives.electra import rtd_labels, sample_softmax
from xeval.engine.objectives.xlco import XLCO, KeyQueue
from xeval.engine.streams import PairBatch

TOKENS = TokenInfo(vocab_size=1000, pad=1, bos=0, eos=2, unk=3, mask=999, first_normal=4)


def micro_config() -> XevalConfig:
    return XevalConfig(vocab_size=1000, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                       intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # fmt: skip


def test_mlm_masking_statistics():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 999, (400, 128), generator=g)
    ids[:, 0], ids[:, -1] = TOKENS.bos, TOKENS.eos
    ids[:50, 100:] = TOKENS.pad
    inputs, labels = mask_tokens(ids, TOKENS, 0.15, torch.Generator().manual_seed(1))
    chosen = labels != -100
    special = (ids < 4) | (ids == 999)
    assert not chosen[special].any()  # specials and padding are never chosen
    assert torch.equal(labels[chosen], ids[chosen])
    rate = chosen.sum() / (~special).sum()
    assert abs(rate.item() - 0.15) < 0.005
    n = chosen.sum().item()
    to_mask = (inputs[chosen] == TOKENS.mask).sum().item() / n
    unchanged = (inputs[chosen] == ids[chosen]).sum().item() / n
    random = 1 - to_mask - unchanged
    assert abs(to_mask - 0.8) < 0.01 and abs(unchanged - 0.1) < 0.01 and abs(random - 0.1) < 0.01
    assert torch.equal(inputs[~chosen], ids[~chosen])
    assert inputs[chosen].min() >= TOKENS.first_normal  # random replacements are ordinary pieces
    # deterministic given the generator's seed
    again, _ = mask_tokens(ids, TOKENS, 0.15, torch.Generator().manual_seed(1))
    assert torch.equal(again, inputs)


def test_rtd_labels_mark_only_changed_tokens_never_padding():
    original = torch.tensor([[0, 10, 11, 12, 2, 1, 1], [0, 20, 21, 2, 2, 30, 2]])
    corrupted = torch.tensor([[0, 10, 99, 12, 2, 1, 1], [0, 21, 21, 2, 2, 30, 2]])
    attention = (original != 1).long()
    # position (0, 3) was masked but the generator sampled the original token: label 0, not 1
    labels = rtd_labels(original, corrupted, attention)
    assert labels.tolist() == [[0, 0, 1, 0, 0, -1, -1], [0, 1, 0, 0, 0, 0, 0]]
    # padding that the generator "changed" stays ignored
    corrupted[0, 5] = 42
    assert rtd_labels(original, corrupted, attention)[0, 5] == -1


def test_inverse_cdf_sampling_samples_softmax_of_logits():
    logits = torch.tensor([[0.0, 1.0, 2.0, -1e4]]).expand(60000, 4)  # the last token has probability ~0
    s = sample_softmax(logits, torch.rand(60000, generator=torch.Generator().manual_seed(0)))
    freq = torch.bincount(s, minlength=4).float() / len(s)
    assert torch.allclose(freq, torch.softmax(logits[0], -1), atol=0.01) and freq[3] == 0
    # hand-computed: softmax([0, ln 3]) = [0.25, 0.75]; u = 0 and 0.2499 -> 0, u = 0.25 and 0.99 -> 1
    two = torch.tensor([[0.0, float(torch.log(torch.tensor(3.0)))]]).expand(4, 2)
    assert sample_softmax(two, torch.tensor([0.0, 0.2499, 0.2501, 0.99])).tolist() == [0, 0, 1, 1]


def test_trtd_forward_labels_follow_sampled_tokens():
    torch.manual_seed(0)
    model = PretrainModel(micro_config(), {"trtd": {"mask_prob": 0.5}}, TOKENS)
    batch = PairBatch([[10, 11, 12], [20, 21]], [[30, 31], [40, 41, 42, 43]], ["en-de", "en-de"], [False, True], [])
    inputs = model.prepare({"pairs": batch}, lambda name: torch.Generator().manual_seed(3))["trtd"]
    seen = {}
    obj = model.objectives["trtd"]
    orig = model.encoder.forward

    def spy(ids, mask=None, **kw):
        seen["corrupted"], seen["mask"] = ids.clone(), mask
        return orig(ids, mask, **kw)

    model.encoder.forward = spy
    loss, stats = obj(inputs, model, StepContext(step=0, seed=0))
    changed = seen["corrupted"] != inputs["original"]
    assert not changed[inputs["attention_mask"] == 0].any()  # padding untouched
    assert not changed[inputs["labels"] == -100].any()  # only masked positions can be replaced
    expected_rate = changed[inputs["attention_mask"] == 1].float().mean()
    assert abs(stats["trtd_replaced"].item() - expected_rate.item()) < 1e-6
    loss.backward()
    assert model.encoder.embeddings.tokens.weight.grad is not None


def test_key_queue_is_a_ring_buffer_filled_before_use():
    q = KeyQueue(size=5, dim=2)
    q.push(torch.ones(3, 2))
    assert not q.full and int(q.filled) == 3 and int(q.ptr) == 3
    q.push(2 * torch.ones(3, 2))  # wraps: slots 3, 4, 0
    assert q.full and int(q.ptr) == 1
    assert q.keys[:, 0].tolist() == [2, 1, 1, 2, 2]
    q.push(torch.arange(14, dtype=torch.float).view(7, 2))  # more than the queue: keeps the last 5
    assert sorted(q.keys[:, 0].tolist()) == [4, 6, 8, 10, 12]


def test_xlco_waits_for_full_queue_and_key_encoder_gets_no_gradients():
    torch.manual_seed(0)
    cfg = {"queue_size": 6, "momentum": 0.5, "temperature": 0.1}
    model = PretrainModel(micro_config(), {"xlco": cfg}, TOKENS)
    xlco: XLCO = model.objectives["xlco"]
    assert xlco.layer == 2  # round(2/3 of 3 layers)
    assert all(not p.requires_grad for p in xlco.key_encoder.parameters())
    batch = PairBatch([[10, 11, 12], [20, 21], [5, 6, 7]], [[30, 31], [40, 41, 42], [8, 9]], ["en-de"] * 3,
                      [False] * 3, [])  # fmt: skip
    inputs = model.prepare({"pairs": batch}, lambda n: torch.Generator().manual_seed(0))["xlco"]
    loss, stats = xlco(inputs, model, StepContext(0, 0))
    assert loss.item() == 0.0 and stats["xlco_queue"] == 3  # not full yet: no contrast against empty slots
    assert not loss.requires_grad
    before = [p.clone() for p in xlco.key_encoder.parameters()]
    loss, stats = xlco(inputs, model, StepContext(1, 0))
    assert stats["xlco_queue"] == 6
    loss, stats = xlco(inputs, model, StepContext(2, 0))
    assert loss.item() > 0
    loss.backward()
    assert all(p.grad is None for p in xlco.key_encoder.parameters())
    assert model.encoder.embeddings.tokens.weight.grad is not None
    # the momentum update moved the key encoder towards the encoder (nothing else changes it)
    with torch.no_grad():
        for p in model.encoder.parameters():
            p.add_(1.0)
    xlco.momentum_update(model.encoder, 0.5)
    moved = [not torch.equal(a, b) for a, b in zip(before, xlco.key_encoder.parameters())]
    assert all(moved)


def test_token_contrast_links_dictionary_pairs_of_a_hand_built_pair():
    table = {"cat": {"katze"}, "sleeps": {"schläft"}, "the": {"die", "der"}, "house": {"haus"}}
    src = units(["▁the", "▁cat", "▁sle", "eps", "▁in", "▁the", "▁house", "."], by_piece=False)
    tgt = units(["▁die", "▁Kat", "ze", "▁schl", "äft", "▁im", "▁Haus", "."], by_piece=False)
    assert [w for w, _ in tgt] == ["die", "katze", "schläft", "im", "haus"] and tgt[1][1] == [1, 2]
    # "the" is ambiguous (twice in the source); "in" has no entry; "house" -> "Haus" (punctuation stripped)
    assert find_links(src, tgt, table) == [(1, 1), (2, 2), (5, 4)]  # word indices
    assert units(["▁Kat", "ze", "<0xE4>"], by_piece=False) == [("", [0, 1, 2])]  # a byte piece: unmatchable
    assert units(["▁", "Katze", "▁Haus"], by_piece=False) == [("katze", [1]), ("haus", [2])]  # never a bare ▁
    # languages without spaces match single pieces
    zh = units(["▁猫", "在", "睡"], by_piece=True)
    assert find_links(units(["▁cat", "▁sleeps"], False), zh, {"cat": {"猫"}}) == [(0, 0)]


def test_word_vectors_are_the_mean_of_their_pieces_and_synonyms_take_two_hops():
    from xeval.engine.objectives.contrast import expand_synonyms, word_vectors

    h = torch.arange(8.0).view(1, 4, 2)  # positions 0..3: [0,1] [2,3] [4,5] [6,7]
    vec, valid = word_vectors(h, torch.tensor([[-1, 0, 0, 1]]))
    assert vec.tolist() == [[[3.0, 4.0], [6.0, 7.0]]] and valid.tolist() == [[True, True]]
    # the shorter side of a pair batch: h is padded to the longer side (encode_pairs), the word map is not
    vec, valid = word_vectors(h, torch.tensor([[0, 0, 1]]))
    assert vec.tolist() == [[[1.0, 2.0], [4.0, 5.0]]] and valid.tolist() == [[True, True]]
    table = {"big": {"groß"}, "large": {"groß", "weit"}, "wide": {"weit"}, "cat": {"katze"}}
    assert expand_synonyms(table) == {"big": {"groß", "weit"}, "large": {"groß", "weit"},
                                      "wide": {"weit", "groß"}, "cat": {"katze"}}  # fmt: skip


def test_token_and_sequence_contrast_run_and_backpropagate():
    torch.manual_seed(0)
    pieces = [f"p{i}" for i in range(1000)]
    pieces[10], pieces[11], pieces[30], pieces[31] = "▁cat", "▁sleeps", "▁Katze", "▁schläft"
    pieces[12], pieces[40] = "▁y", "▁x"
    model = PretrainModel(micro_config(), {"seqcl": {}, "tokcl": {}}, TOKENS, pieces,
                          {"en-de": {"cat": {"katze"}, "sleeps": {"schläft"}}})  # fmt: skip
    batch = PairBatch([[10, 11], [30, 31, 12]], [[30, 31, 40], [10, 11]], ["en-de", "en-de"], [False, True], [])
    inputs = model.prepare({"pairs": batch}, lambda n: torch.Generator().manual_seed(0))
    assert inputs["tokcl"]["links"][0, :2].tolist() == [[0, 0], [1, 1]]  # word indices
    assert inputs["tokcl"]["links"][1, :2].tolist() == [[0, 0], [1, 1]]  # swapped pair: reverse dictionary
    assert inputs["tokcl"]["word_src"][0].tolist() == [-1, 0, 1, -1, -1]  # <s> cat sleeps </s> <pad>
    loss, stats = model(inputs, StepContext(0, 0))
    assert stats["tokcl_links"] == 4
    loss.backward()
    assert model.encoder.embeddings.tokens.weight.grad.abs().sum() > 0
    # one bilingual instance <s> A </s></s> B </s>: B's words start after A and three specials
    model = PretrainModel(micro_config(), {"tokcl": {"concat": True}}, TOKENS, pieces,
                          {"en-de": {"cat": {"katze"}, "sleeps": {"schläft"}}})  # fmt: skip
    inputs = model.prepare({"pairs": batch}, lambda n: torch.Generator().manual_seed(0))["tokcl"]
    assert inputs["pair_ids"][0].tolist() == [0, 10, 11, 2, 2, 30, 31, 40, 2]
    assert inputs["word_tgt"][0].tolist() == [-1, -1, -1, -1, -1, 0, 1, 2, -1]
    loss, stats = model.objectives["tokcl"](inputs, model, StepContext(0, 0))
    assert stats["tokcl_links"] == 4 and loss.item() > 0


def test_pair_sides_encoded_in_length_buckets_give_the_same_losses_and_gradients():
    # data.pair_buckets: sides sorted by length and padded per group; with no dropout the losses and gradients equal
    # one padded pass (lengths 3..9 tokens with the specials, so the groups are cut to different lengths)
    pieces = [f"p{i}" for i in range(1000)]
    pieces[10], pieces[11], pieces[30], pieces[31] = "▁cat", "▁sleeps", "▁Katze", "▁schläft"
    dictionaries = {"en-de": {"cat": {"katze"}, "sleeps": {"schläft"}}}
    rng = torch.Generator().manual_seed(3)
    sides = [[10, 11, *torch.randint(50, 900, (n,), generator=rng).tolist()] for n in (0, 5, 1, 7, 2, 3)]
    other = [[30, 31, *torch.randint(50, 900, (n,), generator=rng).tolist()] for n in (4, 0, 6, 1, 3, 2)]
    batch = PairBatch(sides, other, ["en-de"] * 6, [False] * 6, [])
    results = []
    for buckets in (1, 3, 6, 50):
        torch.manual_seed(0)
        model = PretrainModel(micro_config(), {"seqcl": {}, "tokcl": {}}, TOKENS, pieces, dictionaries)
        inputs = model.prepare({"pairs": batch}, lambda n: torch.Generator().manual_seed(0))
        loss, stats = model(inputs, StepContext(0, 0, pair_buckets=buckets))
        loss.backward()
        results.append((loss.item(), stats["tokcl_links"], model.encoder.embeddings.tokens.weight.grad.clone()))
    for loss, links, grad in results[1:]:
        assert loss == pytest.approx(results[0][0], rel=1e-5) and links == results[0][1] > 0
        torch.testing.assert_close(grad, results[0][2], rtol=1e-4, atol=1e-6)


def test_generator_shares_embeddings_and_is_not_exported():
    model = PretrainModel(micro_config(), {"mrtd": {}}, TOKENS)
    assert model.heads["generator"].embeddings.tokens is model.encoder.embeddings.tokens
    assert model.heads["generator"].config.num_hidden_layers == 1
    assert not any("generator" in k for k in model.encoder.state_dict())


def test_encoder_is_plain_xeval_model():
    assert type(PretrainModel(micro_config(), {"mlm": {}}, TOKENS).encoder) is XevalModel


def test_contrast_layer_deeper_than_the_model_is_an_error_and_fractions_scale():
    cfg = micro_config()  # 3 layers
    for name in ("xlco", "seqcl", "tokcl"):
        with pytest.raises(ConfigError, match=f"objectives.{name}.layer: layer 12 does not exist in a model of 3"):
            PretrainModel(cfg, {name: {"layer": 12}}, TOKENS)
        with pytest.raises(ConfigError, match="fraction"):
            PretrainModel(cfg, {name: {"layer": "two"}}, TOKENS)
    assert PretrainModel(cfg, {"xlco": {"layer": "2/3"}}, TOKENS).objectives["xlco"].layer == 2
    assert PretrainModel(cfg, {"xlco": {}}, TOKENS).objectives["xlco"].layer == 2  # default 2/3 of the depth
    assert PretrainModel(cfg, {"seqcl": {"layer": "1/3"}}, TOKENS).objectives["seqcl"].layer == 1
    assert PretrainModel(cfg, {"tokcl": {"layer": 3}}, TOKENS).objectives["tokcl"].layer == 3
    deep = XevalConfig(vocab_size=1000, hidden_size=16, num_hidden_layers=12, num_attention_heads=2, intermediate_size=32)
    assert PretrainModel(deep, {"xlco": {"layer": "2/3"}}, TOKENS).objectives["xlco"].layer == 8  # InfoXLM's 8 of 12


def xlco_batch(n: int = 4) -> PairBatch:
    src = [[10 + i, 11 + i, 12 + i][: 2 + i % 2] for i in range(n)]
    tgt = [[30 + i, 31 + i][: 1 + i % 2] for i in range(n)]
    return PairBatch(src, tgt, ["en-de"] * n, [False] * n, [])


def test_xlco_reference_options_projection_dot_masking_and_enable_step():
    torch.manual_seed(0)
    cfg = {"queue_size": 4, "momentum": 0.5, "temperature": 0.25, "projection": True, "similarity": "dot",
           "mask_prob": 0.5, "enable_step": 3}  # fmt: skip
    model = PretrainModel(micro_config(), {"xlco": cfg}, TOKENS)
    xlco: XLCO = model.objectives["xlco"]
    assert not xlco.key_proj.weight.requires_grad and torch.equal(xlco.key_proj.weight, xlco.proj.weight)
    inputs = model.prepare({"pairs": xlco_batch()}, lambda n: torch.Generator().manual_seed(1))["xlco"]
    assert (inputs["q_ids"] == TOKENS.mask).any() and (inputs["k_ids"] == TOKENS.mask).any()  # both sides masked
    # enable_step 3, 4 keys per step fill the queue of 4 in one step: step 0 and 1 do nothing at all
    for step in (0, 1):
        loss, stats = xlco(inputs, model, StepContext(step, 0))
        assert loss.item() == 0 and stats["xlco_queue"] == 0
    with torch.no_grad():  # the key encoder is a plain copy of the query encoder until the contrast starts
        model.encoder.embeddings.tokens.weight.add_(1.0)
    loss, stats = xlco(inputs, model, StepContext(2, 0))
    assert loss.item() == 0 and stats["xlco_queue"] == 4
    assert torch.equal(xlco.key_encoder.embeddings.tokens.weight, model.encoder.embeddings.tokens.weight)
    loss, stats = xlco(inputs, model, StepContext(3, 0))
    assert loss.item() > 0
    loss.backward()
    assert xlco.proj.weight.grad is not None and xlco.key_proj.weight.grad is None
    # dot product: unnormalised vectors, so the positive logit is q.k / t with |q| != 1
    q = xlco.sentence(model.encoder, xlco.proj, inputs["q_ids"], inputs["q_mask"])
    assert not torch.allclose(q.norm(dim=-1), torch.ones(4))
    with torch.no_grad():
        xlco.proj.weight.add_(1.0)
    before = xlco.key_proj.weight.clone()
    xlco.momentum_update(model.encoder, 0.5)  # the key projection follows the query projection by EMA
    assert torch.allclose(xlco.key_proj.weight, 0.5 * before + 0.5 * xlco.proj.weight)


def test_xlco_mixup_concatenates_two_pairs_per_instance():
    from xeval.engine.objectives.xlco import mixup_pairs

    src, tgt = [[1, 1], [2], [3, 3, 3], [4]], [[5], [6, 6], [7], [8, 8]]
    seen = set()
    for seed in range(40):
        a, b = mixup_pairs(src, tgt, 99, torch.Generator().manual_seed(seed))
        assert len(a) == len(b) == 2
        for x, y, i in zip(a, b, (0, 2)):
            sides = {tuple(x), tuple(y)}
            s_orders = {(*src[i], 99, *src[i + 1]), (*src[i + 1], 99, *src[i])}
            t_orders = {(*tgt[i], 99, *tgt[i + 1]), (*tgt[i + 1], 99, *tgt[i])}
            assert len(sides & s_orders) == 1 and len(sides & t_orders) == 1  # one side each, either order
            seen.add((tuple(x) in s_orders, tuple(x)))
    assert len(seen) == 8  # 2 instances x 2 orders x (swapped or not) all occur


def test_pooled_loss_norm_is_summed_losses_over_summed_sample_sizes():
    torch.manual_seed(0)
    objectives = {"mlm": {}, "xlco": {"queue_size": 4, "mask_prob": 0.0}}
    batches = {"mono": (torch.randint(4, 999, (3, 20), generator=torch.Generator().manual_seed(0)), ["en"] * 3),
               "pairs": xlco_batch()}  # fmt: skip
    runs = {}
    for norm in ("objective", "pooled"):
        torch.manual_seed(0)
        model = PretrainModel(micro_config(), objectives, TOKENS, loss_norm=norm)
        inputs = model.prepare(batches, lambda n: torch.Generator().manual_seed(2))
        model(inputs, StepContext(0, 0))  # fills the queue
        total, stats = model(inputs, StepContext(1, 0))
        runs[norm] = (total.item(), stats["mlm"].item(), stats["xlco"].item(), int(inputs["mlm"]["n_total"]))
    (obj_total, mlm, xlco, n_masked), (pooled, mlm2, xlco2, _) = runs["objective"], runs["pooled"]
    assert (mlm, xlco) == (mlm2, xlco2) and obj_total == pytest.approx(mlm + xlco)
    assert pooled == pytest.approx((mlm * n_masked + xlco * 4) / (n_masked + 4))
    with pytest.raises(ConfigError, match="pooled"):
        PretrainModel(micro_config(), {"mlm": {}, "seqcl": {}}, TOKENS, loss_norm="pooled")


def test_xlm_tlm_resets_positions_per_side_and_adds_language_embeddings():
    cfg = micro_config()
    cfg.languages = ["de", "en"]
    model = PretrainModel(cfg, {"mlm": {}, "tlm": {"position_reset": True}}, TOKENS)
    batch = PairBatch([[10, 11, 12], [20, 21]], [[30, 31], [40, 41, 42]], ["en-de", "en-de"], [False, True], [])
    mono = (torch.randint(4, 999, (2, 6)), ["de", "en"])
    inputs = model.prepare({"pairs": batch, "mono": mono}, lambda n: torch.Generator().manual_seed(0))
    tlm = inputs["tlm"]  # <s> A </s></s> B </s>: the second side's positions restart at 0
    assert tlm["position_ids"][0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3]
    assert tlm["language_ids"][0].tolist() == [1] * 5 + [0] * 4  # en side, then de side
    assert tlm["language_ids"][1].tolist() == [0] * 4 + [1] * 5  # swapped: de first
    assert inputs["mlm"]["language_ids"].tolist() == [[0] * 6, [1] * 6]
    loss, _ = model(inputs, StepContext(0, 0))
    loss.backward()
    assert model.encoder.embeddings.languages.weight.grad.abs().sum() > 0
    # the XLM-R default: no position or language ids at all
    plain = PretrainModel(micro_config(), {"tlm": {}}, TOKENS).prepare({"pairs": batch}, lambda n: torch.Generator())
    assert set(plain["tlm"]) == {"input_ids", "attention_mask", "labels", "n_total"}
    with pytest.raises(ConfigError, match="mlm and tlm only"):
        PretrainModel(cfg, {"mlm": {}, "xlco": {}}, TOKENS)
