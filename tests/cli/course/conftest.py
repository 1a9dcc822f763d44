pytest_plugins = ["kata_harness.plugin"]
