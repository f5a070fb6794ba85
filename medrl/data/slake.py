"""Old import path of :mod:`medrl.data.sources.slake` (the loader lives there now); kept so that
``from medrl.data.slake import ...`` keeps working."""

from medrl.data.sources import slake as _impl
from medrl.data.sources.slake import *  # noqa: F401,F403


def __getattr__(name: str):
    return getattr(_impl, name)
