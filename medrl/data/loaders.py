"""Old import path of the data registry: ``load_records``, ``parse_source`` and the source table
live in :mod:`medrl.data.registry`; these names keep old imports working."""

from medrl.data.registry import (  # noqa: F401
    DATASETS,
    LOADERS,
    TEXT_ONLY,
    DataNotFoundError,
    find_source,
    load_records,
    locate_source,
    parse_source,
    suite_specs,
)
