"""Hand-made result records for the report and compare tests: two models, several seeds, a missing task,
probes with layers. Numbers are chosen so the expected averages are easy to check by hand."""

from __future__ import annotations

from xeval.results.store import Record, Store, Unit

A, B = "alpha@aaaaaaaaaaaa", "beta@bbbbbbbbbbbb"
LANGS = ["en", "de", "zh"]


def rec(model, task, lang, metrics, seed=1, layer=None, split="test"):
    return Record(unit=Unit(model=model, task=task, lang=lang, split=split, seed=seed, layer=layer,
                            config_hash="0123456789ab"),
                  metrics=dict(metrics), n_examples=10)


def transfer_records(model=A, offset=0.0, skip=(), seeds=(1,)):
    """Every XTREME task on en/de/zh. Scores: en = base, de = base - 10, zh = base - 20 (+ offset);
    seed s adds (s - mean seed) so the mean over seeds equals the seed-free value."""
    base = {"udpos": {"f1": 90.0, "token_accuracy": 95.0}, "panx": {"f1": 80.0},
            "xquad": {"f1": 70.0, "exact_match": 60.0}, "mlqa": {"f1": 60.0, "exact_match": 50.0},
            "tydiqa": {"f1": 50.0, "exact_match": 40.0}, "xnli": {"accuracy": 85.0}, "pawsx": {"accuracy": 95.0}}
    mid = sum(seeds) / len(seeds)
    out = []
    for task, metrics in base.items():
        if task in skip:
            continue
        for i, lang in enumerate(LANGS):
            for seed in seeds:
                values = {m: v - 10 * i + offset + (seed - mid) for m, v in metrics.items()}
                out.append(rec(model, task, lang, values, seed=seed))
    return out


def probe_records(model=A, best_layer=2, layers=(0, 1, 2, 3), dev_best=None):
    """Tatoeba (both directions) for de/zh and alignment AER for de-en, peaking at ``best_layer`` on test, plus the
    selection split (dev) that chooses the reported layer, peaking at ``dev_best`` (no dev records when None: the
    reported layer is then the last one)."""
    out = []
    for split, peak in (("test", best_layer), ("dev", dev_best)):
        if peak is None:
            continue
        for layer in layers:
            bump = 10.0 if layer == peak else 0.0
            shift = 0.0 if split == "test" else -5.0
            for lang, base in (("de", 50.0 + shift), ("zh", 30.0 + shift)):
                out.append(rec(model, "tatoeba", lang, {"accuracy": base + bump + 2, "accuracy_xx_en": base + bump,
                                                        "accuracy_en_xx": base + bump + 2},
                               layer=layer, split=split))
            out.append(rec(model, "alignment", "de-en", {"aer": 40.0 - bump - shift, "precision": 60.0 + bump},
                           layer=layer, split=split))
    return out


def write_run(folder, records):
    store = Store(folder)
    for r in records:
        store.put(r)
    return folder


def xtreme_scale_records(models=("XLM-R base@aaaaaaaaaaaa", "InfoXLM base@bbbbbbbbbbbb", "XLM-E base@cccccccccccc"),
                         seeds=(1, 2, 3)):
    """A paper-scale store: 3 models x 3 seeds x every XTREME language of the seven fine-tuning tasks, plus Tatoeba
    (36 languages, 13 layers) and BUCC, with the metrics the adapters record. Values from a fixed generator; some
    languages beat English, so transfer gaps go negative (real minus signs)."""
    import numpy as np

    from xeval.metrics.xtreme import XTREME

    metrics = {"udpos": ("f1", "precision", "recall", "token_accuracy"), "panx": ("f1", "precision", "recall"),
               "xquad": ("f1", "exact_match"), "mlqa": ("f1", "exact_match"), "tydiqa": ("f1", "exact_match"),
               "xnli": ("accuracy",), "pawsx": ("accuracy",)}
    rng = np.random.default_rng(17)
    out = []
    for m, model in enumerate(models):
        for task, names in metrics.items():
            for lang in XTREME.tasks[task].langs:
                base = rng.uniform(40, 95)
                for seed in seeds:
                    values = {name: float(min(100.0, base + rng.normal(0, 1.5) - 3 * i)) for i, name in enumerate(names)}
                    out.append(rec(model, task, lang, values, seed=seed))
        for lang in XTREME.tasks["tatoeba"].langs:
            for layer in range(13):
                score = 20 + 5 * m + 40 * np.exp(-((layer - 8) ** 2) / 8) + rng.uniform(-5, 5)
                out.append(rec(model, "tatoeba", lang, {"accuracy_en_xx": score, "accuracy_xx_en": score - 2,
                                                        "accuracy": score}, seed=0, layer=layer))
        for lang in XTREME.tasks["bucc2018"].langs:
            out.append(rec(model, "bucc", lang, {"f1": rng.uniform(60, 90), "precision": rng.uniform(60, 90),
                                                 "recall": rng.uniform(60, 90)}, seed=0, layer=8))
    return out
