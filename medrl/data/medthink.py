"""Old import path of :mod:`medrl.data.sources.medthink` (the loader lives there now); kept so that
``from medrl.data.medthink import ...`` keeps working."""

from medrl.data.sources import medthink as _impl
from medrl.data.sources.medthink import *  # noqa: F401,F403


def __getattr__(name: str):
    return getattr(_impl, name)
