"""The engine on a synthetic world's corpora (``data.layout: synthetic``): discovery, the quickstart preset
(MLM + sequence contrast), token contrast from the world's train dictionaries, and the random-init export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from xeval.base.errors import ConfigError
from xeval.engine.config import load_config

SIZES = {"mono": 150, "parallel": 60, "train": 12, "dev": 6, "test": 6, "tatoeba": 6, "alignment": 6}
TINY = {
    "model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32},
    "tokenizer": {"vocab_size": 500, "sample_lines": 1000},
    "data": {"seq_len": 32, "pair_max_side": 16, "mono_batch": 4, "pair_batch": 4},
    "train": {"steps": 4, "max_seconds": None, "warmup": 2, "log_every": 1, "threads": 1},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    from xeval.data.synth import Sizes, WorldConfig, generate_world

    out = tmp_path_factory.mktemp("world")
    generate_world(out, WorldConfig(seed=3, languages=3, sizes=Sizes(**SIZES)))
    return out


def tiny_config(world: Path, **changes):
    cfg = load_config("quickstart", overrides=[f"data.root={world}"]).updated(TINY)
    return cfg.updated(changes) if changes else cfg


def test_synthetic_layout_reads_the_worlds_corpora(world):
    from xeval.engine.cleaning import CleanConfig
    from xeval.engine.corpus import discover_synthetic, load_corpora

    pairs, mono = discover_synthetic(world)
    assert sorted(pairs) == ["qaa-qab", "qaa-qac"] and sorted(mono) == ["qaa", "qab", "qac"]
    corpora = load_corpora(world, clean=CleanConfig(enabled=False), layout="synthetic", pairs_as_mono=True)
    assert sorted(corpora.pairs) == ["qaa-qab", "qaa-qac"]
    held = sum(c["heldout"] for kind in corpora.report.values() for c in kind.values())
    assert sum(len(v) for v in corpora.pairs.values()) + held >= 120  # every pair of the files, minus ~1 % held out
    assert all(len(corpora.mono[lang]) > 140 for lang in ("qaa", "qab", "qac"))  # monolingual + pair sides
    first = corpora.pairs["qaa-qab"][0]
    assert "\t" not in first[0] and not first[0].startswith("#")  # the '#' header line is not a pair
    languages = load_corpora(world, languages=["qaa", "qab"], layout="synthetic")
    assert sorted(languages.pairs) == ["qaa-qab"] and sorted(languages.mono) == ["qaa", "qab"]


def test_layout_errors_are_config_errors(world, tmp_path):
    from xeval.engine.corpus import load_corpora
    from xeval.engine.train import pretrain

    with pytest.raises(ConfigError, match="data.layout 'nope'"):
        load_corpora(world, layout="nope")
    with pytest.raises(ConfigError, match="synthetic world"):
        load_corpora(tmp_path, layout="synthetic")
    with pytest.raises(ConfigError, match=r"data.root \(--data\)"):
        pretrain(load_config("quickstart").updated(TINY), tmp_path / "out")


def test_quickstart_preset_trains_on_a_world_and_loads(world, tmp_path):
    from xeval.engine.train import pretrain
    from xeval.models.encoder import Encoder

    cfg = tiny_config(world)
    assert set(cfg.objectives) == {"mlm", "seqcl"} and cfg.data.layout == "synthetic"
    summary = pretrain(cfg, tmp_path / "m", echo=lambda text: None)
    assert summary["step"] == 4 and {"mlm", "seqcl"} <= set(summary)
    card = json.loads((tmp_path / "m" / "xeval_pretrain.json").read_text())
    assert card["config"]["data"]["layout"] == "synthetic" and "synthetic corpora" in card["note"]
    enc = Encoder(str(tmp_path / "m"))
    assert enc.num_layers == 1 and enc.sentence_embeddings(["te zaru ."]).shape == (2, 1, 16)


def test_token_contrast_uses_the_worlds_train_dictionaries(world, tmp_path):
    from xeval.engine.train import pretrain

    cfg = tiny_config(world, objectives={"tokcl": {"max_links": 8}})
    pretrain(cfg, tmp_path / "m", echo=lambda text: None)
    log = (tmp_path / "m" / "train.log").read_text()
    assert "token contrast dictionaries: qaa-qab (" in log
    links = [json.loads(line)["tokcl_links"] for line in (tmp_path / "m" / "log.jsonl").read_text().splitlines()]
    assert sum(links) > 0


def test_random_init_export_is_the_seeded_initial_model(world, tmp_path):
    from xeval.engine.train import export_random_init, pretrain
    from xeval.models.encoder import Encoder

    trained = tmp_path / "trained"
    pretrain(tiny_config(world), trained, echo=lambda text: None)
    fixed = tiny_config(world, tokenizer={"path": str(trained)})
    a, b = tmp_path / "init-a", tmp_path / "init-b"
    assert export_random_init(fixed, a, echo=lambda text: None)["step"] == 0
    export_random_init(fixed, b, echo=lambda text: None)
    wa, wb, wt = (load_file(str(p / "model.safetensors")) for p in (a, b, trained))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)  # same seed, same tokenizer: the same weights
    assert not all(torch.equal(wa[k], wt[k]) for k in wa)  # and not the trained ones
    assert not (a / "state").exists() and Encoder(str(a)).num_layers == 1
