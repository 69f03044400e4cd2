"""The environment of a dbt model's receipt: this process's, with dbt-core and the adapter.

dbt runs as a subprocess of the same interpreter, so the packages are the ones installed here;
the adapter and its database driver can change a model's rows as much as pandas can a frame's.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version

from ubunye_dagster.own_rows.asset_receipt import ProcessEvidence
from ubunye_rows.evidence import environment, environment_hash

#: The database driver an adapter runs on, by dbt adapter type.
ADAPTER_DRIVERS: dict[str, tuple[str, ...]] = {
    "duckdb": ("duckdb",),
    # psycopg2 is published as two distributions; whichever is installed is named.
    "postgres": ("psycopg2", "psycopg2-binary"),
    # pyspark runs the session method (and hashes the tables); PyHive and thrift the Thrift method.
    "spark": ("pyspark", "PyHive", "thrift"),
}


def dbt_packages(adapter_type: str) -> tuple[str, ...]:
    """The distributions that run a dbt build on ``adapter_type``."""
    drivers = ADAPTER_DRIVERS.get(adapter_type, ())
    return ("dbt-core", "dbt-adapters", f"dbt-{adapter_type}", *drivers)


@lru_cache(maxsize=8)
def _installed_dbt_versions(adapter_type: str) -> tuple[tuple[str, str], ...]:
    found = []
    for name in dbt_packages(adapter_type):
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            continue
    return tuple(found)


def dbt_evidence(adapter_type: str, code_hash: str | None) -> ProcessEvidence:
    """The evidence of a dbt node's record: ``code_hash``, and this environment with the
    versions of dbt-core, the adapter and its driver (those installed)."""
    env = environment()
    env["packages"] = {**env.get("packages", {}), **dict(_installed_dbt_versions(adapter_type))}
    return ProcessEvidence(
        code_hash=code_hash, environment=env, environment_hash=environment_hash(env)
    )
