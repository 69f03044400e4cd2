"""The example shop's assets, one module per frame library."""
