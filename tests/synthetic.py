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


def teacher_text(rec) -> str:
    """A well-formed rollout with the right answer (one short valid step)."""
    return (f"<think>This is a {rec.modality} image. The finding answers the question.</think>"
            f"<answer>{rec.answer}</answer>")


def wrong_text(rec) -> str:
    """A well-formed rollout with a wrong answer (a meta-commentary step first)."""
    return (f"<think>Let me think about this. This is a {rec.modality} image. It looks fine.</think>"
            "<answer>banana</answer>")


def score_right_and_wrong(trainer, records, rows):
    """One scored batch without sampling: the prompts ``records[i] for i in rows`` (each index
    twice in a row), whose rollouts alternate :func:`teacher_text` and :func:`wrong_text`;
    returns ``trainer._generate_and_score_completions`` of it."""
    from medrl.data import to_hf_dataset
    from medrl.train.teacher import install_teacher

    calls = {"n": 0}

    def text(rec):
        calls["n"] += 1
        return teacher_text(rec) if calls["n"] % 2 == 1 else wrong_text(rec)

    install_teacher(trainer, records, text, replace_all=True)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    ds = to_hf_dataset(records, "think_answer")
    return trainer._generate_and_score_completions([dict(ds[i]) for i in rows])
