"""Data sources: one module per dataset family, each reading its publisher's download as-is.

Every source is a name in the table :data:`medrl.data.registry.SOURCES` (its loader, where its
files are looked for, where to get them); read any of them with
:func:`medrl.data.registry.load_records` (``medrl.data.load_records``). Families:

- :mod:`~medrl.data.sources.vqa_rad`, :mod:`~medrl.data.sources.slake`,
  :mod:`~medrl.data.sources.pathvqa`, :mod:`~medrl.data.sources.pmc_vqa` - the papers' training
  and in-domain sets in their official layouts; :mod:`~medrl.data.sources.hf_copies` - their
  Hugging Face copies; :mod:`~medrl.data.sources.medthink` - MedThink rationales.
- :mod:`~medrl.data.sources.omnimedvqa`, :mod:`~medrl.data.sources.mmmu`,
  :mod:`~medrl.data.sources.medxpertqa`, :mod:`~medrl.data.sources.vqa_med`,
  :mod:`~medrl.data.sources.quilt_vqa`, :mod:`~medrl.data.sources.radimagenet_vqa`,
  :mod:`~medrl.data.sources.mimic_cxr` - evaluation sets.
- :mod:`~medrl.data.sources.text_mcq`, :mod:`~medrl.data.sources.mmlu`,
  :mod:`~medrl.data.sources.usmle_sa` - text-only multiple choice.
- :mod:`~medrl.data.sources.medix` - MediX-R1's evaluation collection and RL data;
  :mod:`~medrl.data.sources.rl_sets` - CAPO's and StepGRPO's training sets.
- :mod:`~medrl.data.sources.phantom` - synthetic phantoms with known truth, generated on the fly.

Shared helpers are in :mod:`~medrl.data.sources._common`.
"""
