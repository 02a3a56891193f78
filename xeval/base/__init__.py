"""The ground floor: errors (one line, exit 2), atomic writes, text and JSON reading, the console log, hashing,
torch.distributed collectives, where the shipped YAML lives. Imports nothing else of xeval."""
