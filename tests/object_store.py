"""A real S3 endpoint for tests: moto's server on 127.0.0.1 (offline, the S3 protocol itself)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

#: Credentials moto accepts; nothing leaves the machine.
TEST_CREDENTIALS = {"key": "testing", "secret": "testing"}


@contextlib.contextmanager
def moto_s3() -> Iterator[dict[str, object]]:
    """Start moto's S3 server on a free loopback port; yield fsspec storage options for it with a
    fresh bucket already made."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        bucket = f"ubunye-{uuid.uuid4().hex[:12]}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=TEST_CREDENTIALS["key"],
            aws_secret_access_key=TEST_CREDENTIALS["secret"],
        ).create_bucket(Bucket=bucket)
        yield {
            "bucket": bucket,
            "storage_options": {
                **TEST_CREDENTIALS,
                "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
            },
        }
    finally:
        server.stop()
