"""xla_inspect."""
