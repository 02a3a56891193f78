"""xeval's pre-training engine: model, objectives, corpora and streams, tokenizer, trainer.

Importing this package registers the encoder with ``transformers`` so that ``AutoConfig`` / ``AutoModel``
load engine checkpoints (``config.json`` with ``"model_type": "xeval"`` + ``model.safetensors``) without
``trust_remote_code``. The engine imports no evaluation code.
"""

from transformers import AutoConfig, AutoModel

from xeval.engine.model import XevalConfig, XevalModel

AutoConfig.register(XevalConfig.model_type, XevalConfig, exist_ok=True)
AutoModel.register(XevalConfig, XevalModel, exist_ok=True)

__all__ = ["XevalConfig", "XevalModel"]
