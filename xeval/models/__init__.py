"""One Encoder over Hugging Face models (hub id or folder), sentence-transformers folders and engine checkpoints:
loading and checking model folders, devices and dtypes, the on-disk encoding cache, AutoModel registration."""
