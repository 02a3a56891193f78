import numpy as np
import pytest
import torch

from tests.helpers.tiny import make_tiny_bert
from xeval.base.errors import UserError
from xeval.models.encoder import Encoder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return Encoder(make_tiny_bert(tmp_path_factory.mktemp("tiny")))


def test_identity_is_content_hash(tiny):
    assert tiny.key.startswith(tiny.name + "@") and len(tiny.weights_hash) == 64
    assert tiny.identity()["num_layers"] == 2 and tiny.kind == "hf"


def test_all_layers_from_one_pass_equal_single_layer(tiny):
    texts = ["the cat sat", "der Hund schläft im Haus heute", "我 喜欢 猫"]
    every = tiny.sentence_embeddings(texts)  # [3 layers, 3, H]
    assert every.shape == (3, 3, 32) and every.dtype == np.float32
    only = tiny.sentence_embeddings(texts, layers=[2], batch_size=1)
    np.testing.assert_allclose(every[2], only[0], rtol=1e-5, atol=1e-6)


def test_mean_pooling_matches_manual(tiny):
    text = "le chat dort"
    enc = tiny.tokenizer([text], return_tensors="pt")
    with torch.inference_mode():
        states = tiny.model(**enc, output_hidden_states=True).hidden_states
    manual_all = states[1][0].mean(0).numpy()
    manual_words = states[1][0, 1:-1].mean(0).numpy()
    np.testing.assert_allclose(tiny.sentence_embeddings([text], layers=[1])[0, 0], manual_all, rtol=1e-5, atol=1e-6)
    got = tiny.sentence_embeddings([text], layers=[1], include_special=False)[0, 0]
    np.testing.assert_allclose(got, manual_words, rtol=1e-5, atol=1e-6)


def test_word_maps(tiny):
    batch = tiny.tokenize_words([["the", "cat"], ["Hund"]])
    assert batch.word_ids[0][0] is None and batch.word_ids[0][1] == 0
    [(states, words), _] = tiny.word_piece_states([["the", "cat"], ["Hund"]], layers=[0, 2])
    assert states.shape[0] == 2 and states.shape[1] == len(words) and words[0] == 0 and words[-1] == 1


def test_bad_layer_and_missing_model(tiny, tmp_path):
    with pytest.raises(UserError, match="layer 9 out of range"):
        tiny.sentence_embeddings(["x"], layers=[9])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="config.json"):
        Encoder(tmp_path / "empty")


def test_pickle_weights_are_refused(tmp_path):
    from transformers import BertConfig, BertModel

    folder = make_tiny_bert(tmp_path / "m")
    model = BertModel(BertConfig.from_pretrained(folder))
    for f in folder.glob("*.safetensors"):
        f.unlink()
    # transformers 5 always writes safetensors: write the legacy pickle file by hand, as an old checkpoint has it.
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    with pytest.raises(UserError, match="cannot load"):
        Encoder(folder)


def test_a_probe_of_a_lower_layer_stops_the_pass_there_bit_for_bit(tiny):
    """xeval.models.layer_stack: hidden_states[k] from the stack cut after layer k is the full pass's, exactly."""
    texts = ["the cat sat", "der Hund schläft im Haus heute", "我 喜欢 猫", "le chat dort"]
    full = tiny.sentence_embeddings(texts, layers=[0, 1, 2], batch_size=2)
    cut = tiny.sentence_embeddings(texts, layers=[0, 1], batch_size=2)
    assert np.array_equal(cut, full[:2])
    enc = tiny.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        states = tiny.forward(enc["input_ids"], enc["attention_mask"], up_to=1)
        every = tiny.forward(enc["input_ids"], enc["attention_mask"])
    assert len(states) == 2 and len(every) == 3 and all(torch.equal(a, b) for a, b in zip(states, every))
    assert len(tiny.model.encoder.layer) == tiny.num_layers  # the stack is put back
    [(words_cut, _)] = tiny.word_piece_states([["the", "cat"]], layers=[1])
    [(words_full, _)] = tiny.word_piece_states([["the", "cat"]], layers=[1, 2])
    assert np.array_equal(words_cut[0], words_full[0])


def test_a_cut_first_pass_leaves_the_full_stack_recorded(tmp_path):
    """transformers installs its hidden-state hooks at the first forward: a first pass cut at layer 1 must not
    leave layer 2 unrecorded for every later full pass."""
    fresh = Encoder(make_tiny_bert(tmp_path / "fresh"))
    enc = fresh.tokenizer(["the cat sat", "le chat"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        assert len(fresh.forward(enc["input_ids"], enc["attention_mask"], up_to=1)) == 2
        assert len(fresh.forward(enc["input_ids"], enc["attention_mask"])) == 3
