"""transformers' LOAD REPORT table silenced (issue 26, item 2): known heads (a pooler the checkpoint lacks, the
pre-training heads AutoModel drops) say nothing; weights missing or unused outside them are one warning line."""

from __future__ import annotations

import pytest
from safetensors.torch import load_file, save_file

from tests.helpers.tiny import make_tiny_bert
from xeval.models.encoder import Encoder
from xeval.models.load_report import compact, known_heads_line, unexpected_line


def _masked_lm_checkpoint(folder):
    """A BertForMaskedLM folder (cls.predictions.* weights, no pooler), as pre-training leaves one."""
    from transformers import BertForMaskedLM

    make_tiny_bert(folder)
    BertForMaskedLM.from_pretrained(folder).save_pretrained(folder, safe_serialization=True)
    assert any(k.startswith("cls.") for k in load_file(folder / "model.safetensors"))
    return folder


def _quiet(err: str) -> str:
    return "\n".join(line for line in err.splitlines() if "Writing model shards" not in line).strip()


def test_a_pretraining_checkpoint_loads_without_a_report(tmp_path, capfd):
    folder = _masked_lm_checkpoint(tmp_path / "mlm")
    capfd.readouterr()
    encoder = Encoder(folder)
    err = _quiet(capfd.readouterr().err)
    assert err == "", err  # neither the LOAD REPORT table (cls.* unexpected, pooler missing) nor a line of ours
    assert encoder.num_layers == 2


def test_a_weight_outside_the_known_heads_is_one_warning_line(tmp_path, capfd, caplog):
    folder = make_tiny_bert(tmp_path / "renamed")
    weights = load_file(folder / "model.safetensors")
    weights["encoder.layer.1.output.dense_old.weight"] = weights.pop("encoder.layer.1.output.dense.weight")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    capfd.readouterr()
    with caplog.at_level("WARNING", logger="xeval"):
        Encoder(folder)
    assert "LOAD REPORT" not in capfd.readouterr().err
    lines = [r.getMessage() for r in caplog.records if r.name == "xeval"]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert lines[0].startswith(f"{folder}: ")
    assert ("1 weight not in the checkpoint, initialised at random: encoder.layer.1.output.dense.weight; "
            "1 checkpoint weight the model does not use: encoder.layer.1.output.dense_old.weight") in lines[0]


def test_the_line_names_patterns_and_counts():
    info = {"missing_keys": {f"encoder.layer.{i}.attention.self.query.weight" for i in range(12)}
            | {"pooler.dense.weight", "pooler.dense.bias", "embeddings.word_embeddings.weight"},
            "unexpected_keys": {"cls.predictions.bias", "lm_head.dense.weight"}}
    line = unexpected_line("m", info)
    # 13 outside the pooler; layer indices folded into one pattern; the heads of pre-training unmentioned
    assert line == ("m: 13 weights not in the checkpoint, initialised at random: "
                    "encoder.layer.*.attention.self.query.weight (12), embeddings.word_embeddings.weight "
                    "(is this the architecture the checkpoint was trained as?)")
    assert known_heads_line("m", info) == ("m: known heads initialised at random: pooler.dense.bias, "
                                           "pooler.dense.weight; left out: cls.predictions.bias, lm_head.dense.weight")
    assert unexpected_line("m", {"missing_keys": {"pooler.dense.bias"}, "unexpected_keys": set()}) is None
    assert compact([f"a.{i}.b" for i in range(3)] + [f"x{i}" for i in range(5)]) == \
        "a.*.b (3), x0, x1, x2 and 2 more patterns"


@pytest.mark.parametrize("which", ["minilm_dir"])
def test_a_real_model_loads_without_the_report(which, request, capfd):
    folder = request.getfixturevalue(which)
    capfd.readouterr()
    Encoder(folder)
    err = _quiet(capfd.readouterr().err)
    assert "LOAD REPORT" not in err and "MISSING" not in err and err == "", err
