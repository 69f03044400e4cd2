"""One step's record and its receipt: what the record is about, its metadata codec, the
step's session, masking, and the records of steps that failed."""
