"""Reading Japanese and English text: full-text terms, identifiers and time expressions."""
