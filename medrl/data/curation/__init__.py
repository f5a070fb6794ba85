"""Curation tools of the papers, each resumable (results appended per record to a JSONL log,
ids already there are skipped on the next run) and with a progress bar.

- :func:`~medrl.data.curation.capo.mixed_difficulty_filter` - CAPO Sec. 3.1.
- :func:`~medrl.data.curation.exemplars.knowledge_exemplars` - ARMed knowledge injection.
- :func:`~medrl.data.curation.refine.refine_vqa` - ARMed VQA refinement (judge audit).
- :func:`~medrl.data.curation.key_steps.extract_key_steps` - StepGRPO key steps.
- :func:`~medrl.data.curation.evidence.add_evidence` - reference evidence for records without
  gold reasoning.

Judge-dependent tools accept any object following :class:`medrl.judges.base.Judge`.
"""
