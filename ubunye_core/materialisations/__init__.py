"""Materialisations as they are stored: the digest of their bytes, the writer's notes read back,
Delta table versions, and the staging names of writes in progress."""
