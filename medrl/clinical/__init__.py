"""Clinical text layer (low level): lexicon, negation/uncertainty (negspacy), hard mismatches."""
