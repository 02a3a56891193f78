"""xeval.base.st_pooling: the Pooling module of a sentence-transformers folder, read once for probes and engine."""

import json

from xeval.base.st_pooling import pooling_config, pooling_modes


def test_the_current_key_and_the_older_booleans_name_the_same_modes():
    assert pooling_modes({"pooling_mode": "cls"}) == ["cls"]
    assert pooling_modes({"pooling_mode": ["mean", "max"]}) == ["mean", "max"]
    assert pooling_modes({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}) == ["mean"]
    # several booleans: concatenated in sentence-transformers' order (cls, mean, max, ...)
    assert pooling_modes({"pooling_mode_max_tokens": True, "pooling_mode_cls_token": True}) == ["cls", "max"]
    assert pooling_modes({"pooling_mode_lasttoken": True}) == ["lasttoken"]
    assert pooling_modes({"word_embedding_dimension": 384}) == []  # none named: the caller decides


def test_the_pooling_config_is_found_through_modules_json(tmp_path):
    assert pooling_config(tmp_path) is None  # no modules.json: not a sentence-transformers folder
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    assert pooling_config(tmp_path) is None  # the module's config.json is missing
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert pooling_config(tmp_path) == {"pooling_mode_cls_token": True}
    (tmp_path / "1_Pooling" / "config.json").write_text("[1, 2]")  # no mapping
    assert pooling_config(tmp_path) is None
    (tmp_path / "modules.json").write_text("{not json")
    assert pooling_config(tmp_path) is None
