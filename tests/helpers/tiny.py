"""A tiny BERT model and WordPiece tokenizer built locally (no hub), shared by tests that need an encoder."""

from __future__ import annotations

from pathlib import Path

TRAIN_TEXT = [
    "the cat sat on the mat", "der Hund schläft im Haus", "le chat dort sur le tapis",
    "el perro come en la casa", "我 喜欢 猫", "สวัสดี ครับ", "مرحبا بالعالم", "a quick brown fox jumps",
]


def make_tiny_bert(folder: Path, texts: list[str] | None = None, vocab_size: int = 400, layers: int = 2,
                   hidden: int = 32, seed: int = 0, heads: int = 2, intermediate: int | None = None,
                   max_positions: int = 128) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    texts = list(texts or TRAIN_TEXT)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_positions)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate or hidden * 2,
                        max_position_embeddings=max_positions)
    model = BertModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder
