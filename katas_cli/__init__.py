"""katas CLI."""
