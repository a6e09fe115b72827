"""Replaceable parts behind small base classes: embedders, LLMs, token counters, chunking."""
