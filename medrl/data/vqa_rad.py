"""Old import path of :mod:`medrl.data.sources.vqa_rad` (the loader lives there now); kept so that
``from medrl.data.vqa_rad import ...`` keeps working."""

from medrl.data.sources import vqa_rad as _impl
from medrl.data.sources.vqa_rad import *  # noqa: F401,F403


def __getattr__(name: str):
    return getattr(_impl, name)
