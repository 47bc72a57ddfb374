"""The conformance suite every graph engine must pass (see conftest.py)."""
