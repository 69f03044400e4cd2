"""Run records v2: the model, comparisons, drift verdicts and the sketches they carry."""
