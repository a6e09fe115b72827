"""The four memory layers; each owns its tables and indexes."""
