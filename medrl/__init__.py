"""medrl: RL post-training of medical vision-language models toward sound step-wise reasoning."""

__version__ = "0.1.0"
