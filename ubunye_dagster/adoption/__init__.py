"""One-step adoption: ``with_ubunye`` and the failure hooks it adds."""
