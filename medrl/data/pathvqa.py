"""Old import path of :mod:`medrl.data.sources.pathvqa` (the loader lives there now); kept so that
``from medrl.data.pathvqa import ...`` keeps working."""

from medrl.data.sources import pathvqa as _impl
from medrl.data.sources.pathvqa import *  # noqa: F401,F403


def __getattr__(name: str):
    return getattr(_impl, name)
