"""Expectations: rules on an output's rows, counted as it is written, and their asset checks."""
