"""Signature tasks: one per paper whose mechanism the shared phantom task gives nothing to act on.

Each file defines one :class:`~medrl.effects.signatures.base.Signature` - the paper's claim, a
phantom task where its mechanism can act, the failure planted in the warm-up model at a stated
share, the arms the paper compares and the metric it claims - read top to bottom:

- :mod:`~medrl.effects.signatures.armed`: reward collapse (ARMed);
- :mod:`~medrl.effects.signatures.capo`: a language shortcut and reasoning-answer inconsistency (CAPO);
- :mod:`~medrl.effects.signatures.stepgrpo`: a sparse reward (StepGRPO);
- :mod:`~medrl.effects.signatures.medix`: paraphrased right answers and wrong modality tags (MediX-R1).

MRPO's failure cascade is the harness's main task (:func:`medrl.data.sources.phantom.warmup_traces`).
"""

from __future__ import annotations

from medrl.effects.signatures.armed import SIGNATURE as ARMED
from medrl.effects.signatures.base import Arm, Signature
from medrl.effects.signatures.capo import SIGNATURE as CAPO
from medrl.effects.signatures.medix import SIGNATURE as MEDIX
from medrl.effects.signatures.stepgrpo import SIGNATURE as STEPGRPO

#: name -> signature task (``medrl bench effects --set signatures=armed,capo,stepgrpo,medix``)
SIGNATURES: dict[str, Signature] = {s.name: s for s in (ARMED, CAPO, STEPGRPO, MEDIX)}


def get_signature(name: str) -> Signature:
    try:
        return SIGNATURES[name]
    except KeyError:
        raise ValueError(f"effects: unknown signature {name!r}; choose among {sorted(SIGNATURES)}") from None


__all__ = ["Arm", "SIGNATURES", "Signature", "get_signature"]
