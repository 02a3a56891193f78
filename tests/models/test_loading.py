"""Loading models the way users have them: --device mistakes and missing folders as one line before anything
loads; --dtype, --revision and --trust-remote-code recorded; sentence-transformers folders pooled as their modules
say."""

from __future__ import annotations

import pytest
import torch

from tests.helpers.transfer import tiny_model
from xeval import cli
from xeval.results.store import Store

PROBE = ["--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de", "--layers", "2", "--max-eval", "30"]


def _one_line(capfd, argv) -> str:
    rc = cli.main(argv)
    err = capfd.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("device, expected", [
    ("gpu", "--device gpu: unknown device (did you mean 'cuda'?)"),
    ("banana", "--device banana: unknown device; expected auto, cpu, cuda, cuda:N or mps"),
    ("cuda", "--device cuda: "),
    ("cuda:7", "--device cuda:7: "),
])
def test_device_mistakes_are_one_line_before_loading(device, expected, tmp_path, capfd):
    if device.startswith("cuda") and torch.cuda.is_available() and (device == "cuda" or torch.cuda.device_count() > 7):
        pytest.skip("this machine has the CUDA device")
    err = _one_line(capfd, ["run", "--model", str(tmp_path / "absent"), *PROBE, "--device", device,
                            "--out", str(tmp_path / "runs")])
    assert expected in err and "absent" not in err  # the device fails first, before the model is looked for
    if device.startswith("cuda") and not torch.cuda.is_available():
        assert "use --device cpu or auto" in err


def test_missing_local_folder_is_one_line(tmp_path, capfd):
    err = _one_line(capfd, ["run", "--model", str(tmp_path / "no" / "such"), *PROBE, "--out", str(tmp_path / "r")])
    assert f"{tmp_path / 'no' / 'such'}: no such model folder" in err and "Repo id" not in err


def test_dtype_is_recorded_and_part_of_the_identity(data_root, tmp_path, capfd):
    model, out = tiny_model(data_root), tmp_path / "runs"
    base = ["run", "--model", str(model), "--data", str(data_root), "--out", str(out), "--device", "cpu", *PROBE]
    assert cli.main(base) == 0 and cli.main([*base, "--dtype", "bfloat16"]) == 0
    records = list(Store(out).records())
    assert sorted(r.model["dtype"] for r in records) == ["bfloat16", "float32"]
    assert len({r.unit.config_hash for r in records}) == 2 and len({r.unit.model for r in records}) == 1
    capfd.readouterr()


# ------------------------------------------------------------------ sentence-transformers folders

TEXTS = ["the cat sat on the mat", "der Hund schläft im Haus", "le chat dort", "a quick brown fox jumps over it",
         "我 喜欢 猫"]


def _st_folder(base, out, pooling="cls", dense=True, normalize=True):
    """A tiny sentence-transformers folder written by the sentence-transformers package itself."""
    st = pytest.importorskip("sentence_transformers")
    try:  # sentence-transformers >= 5.x; older releases: sentence_transformers.models
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:
        from sentence_transformers import models

    transformer = models.Transformer(str(base))
    width = transformer.auto_model.config.hidden_size
    modules = [transformer, models.Pooling(width, pooling_mode=pooling)]
    if dense:
        torch.manual_seed(3)
        modules.append(models.Dense(width, width, activation_function=torch.nn.Tanh()))
    if normalize:
        modules.append(models.Normalize())
    st.SentenceTransformer(modules=modules, device="cpu").save(str(out))
    return out


@pytest.fixture(scope="module")
def st_cls_dense(data_root, tmp_path_factory):
    return _st_folder(tiny_model(data_root), tmp_path_factory.mktemp("st") / "tiny-cls-dense")


def test_cls_dense_folder_is_pooled_as_its_modules_say(st_cls_dense):
    SentenceTransformer = pytest.importorskip("sentence_transformers").SentenceTransformer

    from xeval.models.encoder import Encoder

    encoder = Encoder(st_cls_dense)
    assert encoder.sentence_pipeline.describe().startswith("sentence-transformers: cls + Dense(32->32, Tanh) + "
                                                           "Normalize")
    ours = encoder.sentence_embeddings(TEXTS, layers=[encoder.num_layers], pooling="model")[0]
    theirs = SentenceTransformer(str(st_cls_dense), device="cpu").encode(TEXTS, convert_to_numpy=True)
    assert ours.shape == theirs.shape
    assert abs(ours - theirs).max() < 1e-5
    # a bare backbone's mean pooling is something else entirely
    mean = encoder.sentence_embeddings(TEXTS, layers=[encoder.num_layers], pooling="mean")[0]
    assert abs(mean - theirs).max() > 0.1


def test_tatoeba_on_a_sentence_transformers_folder_records_its_pooling(st_cls_dense, data_root, tmp_path, capfd):
    out = tmp_path / "runs"
    base = ["run", "--model", str(st_cls_dense), "--data", str(data_root), "--out", str(out), "--device", "cpu",
            "--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de", "--layers", "1,2", "--max-eval", "30"]
    assert cli.main(base) == 0
    records = {r.unit.layer: r for r in Store(out).records() if r.unit.split == "test"}
    assert {r.config["pooling"] for r in records.values()} == {"model"}
    assert records[2].config["sentence_pooling"].startswith("sentence-transformers: cls + Dense(32->32, Tanh)")
    # the command line still decides when it names a pooling; that is another unit
    assert cli.main([*base, "--set", "pooling=mean"]) == 0
    tests = [r for r in Store(out).records() if r.unit.split == "test"]  # (a dev split may choose the layer)
    assert sorted(r.config["pooling"] for r in tests) == ["mean", "mean", "model", "model"]
    capfd.readouterr()


def test_pooling_that_cannot_be_honoured_is_named(data_root, tmp_path, capfd):
    import json

    from xeval.models.encoder import Encoder

    folder = _st_folder(tiny_model(data_root), tmp_path / "weighted", pooling="mean", dense=False)
    config = folder / "1_Pooling" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "pooling_mode": "weightedmean"}))
    from xeval.base import console

    console.configure(0)
    encoder = Encoder(folder)
    err = capfd.readouterr().err
    assert "sentence-transformers modules not honoured: Pooling mode 'weightedmean' (pooled with mean instead)" in err
    assert encoder.sentence_pipeline.mode == "mean"


@pytest.mark.slow
def test_minilm_tatoeba_equals_sentence_transformers_encode(minilm_dir, data_root, tmp_path, capfd):
    """all-MiniLM-L6-v2 (mean + Normalize, max_seq_length 256): xeval's Tatoeba accuracies at the last layer equal
    those from sentence-transformers' own encode, scored by the same retrieval metric."""
    from sentence_transformers import SentenceTransformer

    from xeval.adapters.probes.retrieval import bidirectional_scores
    from xeval.cards.catalog import load_suite
    from xeval.data.sources import DataRoot, load_examples

    out = tmp_path / "runs"
    assert cli.main(["run", "--model", str(minilm_dir), "--data", str(data_root), "--out", str(out), "--device",
                     "cpu", "--suite", "xtreme-mini", "--tasks", "tatoeba", "--langs", "de,fr", "--layers", "6",
                     "--max-eval", "80"]) == 0
    capfd.readouterr()
    ours = {r.unit.lang: r for r in Store(out).records()}
    assert {r.config["sentence_pooling"] for r in ours.values()} == {"sentence-transformers: mean + Normalize "
                                                                     "(Dense/Normalize on the last layer only)"}
    model = SentenceTransformer(str(minilm_dir), device="cpu")
    card = load_suite("xtreme-mini").card("tatoeba")
    for lang in ("de", "fr"):
        pairs = load_examples(card, lang, card.split_for(lang), DataRoot.resolve(str(data_root)))[:80]
        xx = model.encode([p.src for p in pairs], convert_to_numpy=True)
        en = model.encode([p.tgt for p in pairs], convert_to_numpy=True)
        metrics, _ = bidirectional_scores(xx, en)
        assert ours[lang].n_examples == len(pairs)
        for name, value in metrics.items():
            assert ours[lang].metrics[name] == pytest.approx(value, abs=1e-9), (lang, name)


def test_an_engine_run_that_has_not_finished_is_named_when_loaded(tmp_path, caplog):
    import json

    from tests.helpers.tiny import make_tiny_bert
    from xeval.models.encoder import Encoder
    from xeval.models.files import unfinished_run

    folder = make_tiny_bert(tmp_path / "m")  # a loadable folder of its own; the cards below are the engine's
    card = folder / "xeval_pretrain.json"
    for obj, warned in (({"config": {}, "last": {}}, True),  # written at the start: the run is training
                        ({"config": {}, "last": {"step": 3}, "finished": False}, True),  # train.stop_after
                        ({"config": {}, "last": {"step": 6}, "finished": True}, False),
                        ({"config": {}, "last": {"step": 6}}, False),  # a card from before ``finished``
                        ({"config": {}, "last": {}, "step": 300}, False)):  # a checkpoint-series export
        card.write_text(json.dumps(obj))
        assert bool(unfinished_run(folder)) is warned, obj
    assert unfinished_run(tmp_path) is None  # no card: not an engine run
    card.write_text(json.dumps({"config": {}, "last": {}}))
    with caplog.at_level("WARNING", logger="xeval"):
        Encoder(str(folder))
    assert "its pre-training has not finished" in caplog.text
