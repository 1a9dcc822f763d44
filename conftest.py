"""Every kata test runs through the harness plugin (see kata_harness/plugin.py)."""

pytest_plugins = ["kata_harness.plugin", "pytester"]
