"""Vocabularies, tokenizers, batching and tasks."""
