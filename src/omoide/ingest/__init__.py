"""Bringing outside material into memory: files, sections and source trees."""
