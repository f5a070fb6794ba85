"""Training: recipes (YAML -> resolved config), the MedGRPOTrainer subclass of TRL's
GRPOTrainer, multi-stage pipelines (ARMed, StepGRPO) and the SFT warm-up.

Nothing heavy is imported here; import the submodules (``medrl.train.trainer`` pulls in torch
and TRL).
"""
