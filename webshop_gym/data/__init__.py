"""The shop's data: reading the reference's files, the columnar catalog, goals, title nouns, caches.

Compiles the three reference JSON files into memory-mapped columns (:mod:`.catalog`,
:mod:`.compiler`), builds goal sets (:mod:`.goals`), tags title nouns (:mod:`.tagger`,
:mod:`.title_nouns`) and generates synthetic shops (:mod:`.synth`).  Imports only
:mod:`webshop_gym.utils` and :mod:`webshop_gym.error`: never search, reward or anything above.
"""
