"""Drift: a materialisation judged against its predecessor (in the step, in the UI summary, by
the sensor) and the notifications of its verdicts."""
