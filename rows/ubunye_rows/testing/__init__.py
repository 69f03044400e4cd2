"""Test suites shipped with ubunye_rows, so any frame engine can prove it keeps rows-v1."""
