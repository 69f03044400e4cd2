"""Test suites shipped with ubunye_core, so any frame engine can prove it keeps rows-v1."""
