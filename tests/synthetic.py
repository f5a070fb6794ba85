"""Synthetic VQA records with grey-scale images, shared by the tiny-model tests."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

QUESTIONS = ["Is there a nodule in the left lung?", "Which organ shows the abnormality?",
             "Is the heart enlarged on this radiograph?", "What imaging modality was used?"]
ANSWERS = ["yes", "liver", "no", "CT"]


def synthetic_records(folder: str | Path, questions: Sequence[str] = QUESTIONS, answers: Sequence[str] = ANSWERS, *,
                      size: Callable[[int], tuple[int, int]] = lambda i: (64, 64),
                      gold_reasoning: Callable[[int], str | None] = lambda i: None) -> list:
    """One record per (question, answer), each with its own random grey-scale PNG (like an X-ray)
    of ``size(i)`` = (width, height), tagged as a chest CT."""
    from PIL import Image

    from medrl.data import VQARecord

    folder = Path(folder)
    recs = []
    for i, (q, a) in enumerate(zip(questions, answers)):
        path = folder / f"img{i}.png"
        w, h = size(i)
        Image.fromarray((np.random.RandomState(i).rand(h, w) * 255).astype("uint8"), mode="L").save(path)
        recs.append(VQARecord(id=f"r{i}", images=[str(path)], question=q, answer=a, modality="CT",
                              modality_tag="CT_SCAN", organ="Chest", gold_reasoning=gold_reasoning(i)))
    return recs
