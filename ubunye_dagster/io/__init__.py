"""The IO managers, their write and read pipeline, the storages and the frame handlers."""
