"""The simulator core: episode state as arrays and pure transitions (no web, search or NLP imports)."""
