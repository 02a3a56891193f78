"""A small fake data root in the shared-data layout (gettext pairs, fortunes, a MUSE dictionary) and a micro engine
config, so the engine's training tests run anywhere in seconds (the real corpora are exercised by data-marked tests)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

WORDS = [("cat", "Katze"), ("dog", "Hund"), ("house", "Haus"), ("tree", "Baum"), ("water", "Wasser"),
         ("book", "Buch"), ("child", "Kind"), ("city", "Stadt"), ("car", "Auto"), ("bird", "Vogel"),
         ("sleeps", "schläft"), ("eats", "isst"), ("sees", "sieht"), ("reads", "liest"), ("open", "öffnen"),
         ("file", "Datei"), ("save", "speichern"), ("window", "Fenster"), ("red", "rote"), ("small", "kleine")]  # fmt: skip


def make_data_root(root: Path, n_pairs: int = 240, n_mono: int = 240, seed: int = 0) -> Path:
    rng = random.Random(seed)
    (root / "parallel" / "gettext_mo").mkdir(parents=True, exist_ok=True)
    (root / "monolingual" / "debian_fortunes").mkdir(parents=True, exist_ok=True)
    (root / "muse_dictionaries" / "full").mkdir(parents=True, exist_ok=True)
    lines = ["# en\tde\tsource_domain"]
    for i in range(n_pairs):
        k = rng.randint(3, 7)
        ws = [rng.choice(WORDS) for _ in range(k)]
        lines.append(f"the {' '.join(w[0] for w in ws)} {i}\tdie {' '.join(w[1] for w in ws)} {i}\tdemo")
    lines += ["%s: cannot open %d\t%s: kann %d nicht öffnen\tdemo", "Germany\tDeutschland\tiso_3166-1",
              "OK\tOK\tdemo", "_File\t_Datei\tdemo"]  # fmt: skip
    with gzip.open(root / "parallel" / "gettext_mo" / "en-de.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    for lang, side in (("en", 0), ("de", 1)):
        rows = [" ".join(rng.choice(WORDS)[side] for _ in range(rng.randint(6, 20))) for _ in range(n_mono)]
        with gzip.open(root / "monolingual" / "debian_fortunes" / f"{lang}.txt.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
    (root / "muse_dictionaries" / "full" / "en-de.txt").write_text(
        "\n".join(f"{a} {b}" for a, b in WORDS) + "\n", encoding="utf-8"
    )
    (root / "README.md").write_text("fake shared data for engine tests\n")
    return root


def micro_config(data_root: Path, objectives: dict, tokenizer: Path | None = None, **train):
    from xeval.engine.config import PretrainConfig

    return PretrainConfig.from_dict({
        "name": "test", "size": "micro",
        "model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                  "max_position_embeddings": 128, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.0},
        "tokenizer": {"path": str(tokenizer) if tokenizer else None, "vocab_size": 500, "model": "bpe",
                      "sample_lines": 2000},
        "data": {"root": str(data_root), "parallel": ["gettext"], "monolingual": ["fortunes"], "seq_len": 32,
                 "pair_max_side": 14, "mono_batch": 4, "pair_batch": 4},
        "train": {"steps": 6, "lr": 1e-3, "warmup": 2, "log_every": 1, "save_every": 100, **train},
        "objectives": objectives,
    })  # fmt: skip


def free_port() -> int:
    """A TCP port nobody listens on right now (torchrun's rendezvous; fixed formulas collide on a shared machine)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
