"""Clinical text, the lowest part of the answer package: the lexicon, qualifier and negation data
files (package data next to these modules), negation/uncertainty scopes (negspacy), category
mismatches and equivalent written forms."""
