"""The pytest harness that runs kata tests against a learner file or the reference."""
