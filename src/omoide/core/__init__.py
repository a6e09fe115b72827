"""The basics every part builds on: records, configuration as plain data, scopes, ids, checks."""
