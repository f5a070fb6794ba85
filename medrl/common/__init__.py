"""Small pieces every layer of medrl shares, each a module of its own:

- :mod:`medrl.common.registry` - the one registry class (recipes name rewards, methods,
  judges, advantage estimators by name) and objects named by import path or entry point;
- :mod:`medrl.common.jsonl` - reading and writing JSON-lines files;
- :mod:`medrl.common.paths` - where data and caches are found;
- :mod:`medrl.common.papers` - the papers medrl implements, cited by name;
- :mod:`medrl.common.embeddings` - sentence encoders (offline MiniLM, the papers' encoders);
- :mod:`medrl.common.modality` - MediX-R1's image-modality tags.

Nothing here imports a layer above it (``[tool.importlinter]`` in ``pyproject.toml``).
"""
