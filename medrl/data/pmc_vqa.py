"""Old import path of :mod:`medrl.data.sources.pmc_vqa` (the loader lives there now); kept so that
``from medrl.data.pmc_vqa import ...`` keeps working."""

from medrl.data.sources import pmc_vqa as _impl
from medrl.data.sources.pmc_vqa import *  # noqa: F401,F403


def __getattr__(name: str):
    return getattr(_impl, name)
