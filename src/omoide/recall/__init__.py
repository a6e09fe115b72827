"""One question in, one token-budgeted context out; and the provenance of every recall."""
