"""pytest configuration shared by the test suite and the doctests."""

collect_ignore = ["exact/__main__.py", "tests/data/generate_reference.py", "tests/mutation.py"]
