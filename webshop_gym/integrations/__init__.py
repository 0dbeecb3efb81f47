"""Integrations with outside training stacks (each an optional extra, imported lazily)."""
