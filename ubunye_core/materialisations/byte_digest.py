"""A digest of stored bytes: one file, or a folder's data files, as ``<algorithm>:<hex>``.

Written data that still hashes to the byte digest recorded with it is, byte for byte, the data
whose rows-v1 digest was recorded, so a reader can take that digest without hashing the rows.

- A file: BLAKE3 of its bytes (``b3sum`` gives the same hex).
- A folder (Spark's part files): for each data file, in sorted relative POSIX path order, its
  relative path, NUL, its size in decimal, NUL, then its bytes. A data file is one with no path
  part starting with ``.`` or ``_`` (Spark's and Hadoop's rule: no ``_SUCCESS``, ``.crc``, or
  sidecar).

``blake3`` is the default (about four times SHA-256 with SHA-NI on this project's bench
machine); a ``sha256:`` digest is checked as well.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from typing import Any

#: The algorithm new digests are made with.
DEFAULT_ALGORITHM = "blake3"
ALGORITHMS = ("blake3", "sha256")
#: Bytes read from a file at a time when a folder is hashed.
_CHUNK = 8 << 20
#: A local file up to this size is digested on the calling thread even when every core may be
#: used: waking the other cores costs more than they save on it.
EVERY_CORE_ABOVE_BYTES = 1 << 20


def new_hasher(algorithm: str = DEFAULT_ALGORITHM, *, every_core: bool = False) -> Any:
    """A fresh hasher (``update``/``hexdigest``) for one of ``ALGORITHMS``; ValueError otherwise.

    ``every_core``: BLAKE3 hashes each large update on all cores (the same digest), for a
    caller with nothing else running beside it."""
    if algorithm == "blake3":
        import blake3

        return blake3.blake3(max_threads=blake3.blake3.AUTO) if every_core else blake3.blake3()
    if algorithm == "sha256":
        return hashlib.sha256()
    raise ValueError(f"unknown byte digest algorithm {algorithm!r} (known: {ALGORITHMS})")


def algorithm_of(digest: str | None) -> str | None:
    """The algorithm a recorded digest names (``blake3:...`` gives ``blake3``); None when the
    digest is missing or names no algorithm this module knows."""
    if not digest or ":" not in digest:
        return None
    algorithm = digest.split(":", 1)[0]
    return algorithm if algorithm in ALGORITHMS else None


def bytes_digest(data: bytes | memoryview, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """The digest of one file's bytes held in memory."""
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return f"{algorithm}:{hasher.hexdigest()}"


def is_data_file(relative: str) -> bool:
    """True when a file at ``relative`` (inside a folder) holds data readers load."""
    return not any(part.startswith((".", "_")) for part in relative.split("/"))


def folder_digest(fs: Any, root: str, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """The digest of the data files under ``root`` on the fsspec file system ``fs``."""
    root = root.rstrip("/")
    files = {}
    for found in fs.find(root):
        relative = posixpath.relpath(found, root)
        if is_data_file(relative):
            files[relative] = found
    hasher = new_hasher(algorithm)
    for relative in sorted(files):
        size = fs.size(files[relative])
        hasher.update(f"{relative}\0{size}\0".encode())
        _hash_file(hasher, fs, files[relative])
    return f"{algorithm}:{hasher.hexdigest()}"


def file_digest(
    fs: Any, path: str, algorithm: str = DEFAULT_ALGORITHM, *, every_core: bool = False
) -> str:
    """The digest of one file on the fsspec file system ``fs``, read in chunks (``every_core``:
    see :func:`new_hasher`)."""
    hasher = new_hasher(algorithm, every_core=every_core)
    _hash_file(hasher, fs, path)
    return f"{algorithm}:{hasher.hexdigest()}"


def local_file_digest(
    path: str, algorithm: str = DEFAULT_ALGORITHM, *, every_core: bool = False
) -> str:
    """The digest of one local file, read without fsspec (BLAKE3 maps it, every thread reading
    its own part; ``every_core``: see :func:`new_hasher`, for a file above
    ``EVERY_CORE_ABOVE_BYTES``)."""
    every_core = every_core and os.path.getsize(path) > EVERY_CORE_ABOVE_BYTES
    hasher = new_hasher(algorithm, every_core=every_core)
    if algorithm == "blake3":
        hasher.update_mmap(path)
    else:
        with open(path, "rb") as handle:
            _hash_stream(hasher, handle)
    return f"{algorithm}:{hasher.hexdigest()}"


def _hash_file(hasher: Any, fs: Any, path: str) -> None:
    with fs.open(path, "rb") as handle:
        _hash_stream(hasher, handle)


def _hash_stream(hasher: Any, handle: Any) -> None:
    while chunk := handle.read(_CHUNK):
        hasher.update(chunk)
