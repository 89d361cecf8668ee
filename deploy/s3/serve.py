"""moto's standalone S3 server for the compose file's `s3` profile, with its buckets made before it is healthy.

Listens on 0.0.0.0:5000 (`S3_PORT`), holds objects in memory (they go with the container), creates each bucket
named in `S3_BUCKETS` (comma-separated), then serves until SIGTERM or SIGINT. moto accepts any credentials: it
stands in for a store in tests and demos (what it does not emulate: docs/object-storage.md).
"""

import os
import signal

import boto3
from moto.server import ThreadedMotoServer


def main() -> None:
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)  # before the server's threads start: they inherit the mask
    port = int(os.environ.get("S3_PORT", "5000"))
    server = ThreadedMotoServer(ip_address="0.0.0.0", port=port, verbose=False)
    server.start()
    local = boto3.client(
        "s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
        aws_access_key_id="serve", aws_secret_access_key="serve",
    )  # fmt: skip
    for bucket in filter(None, (b.strip() for b in os.environ.get("S3_BUCKETS", "").split(","))):
        local.create_bucket(Bucket=bucket)
    print(f"moto S3 on :{port}, buckets: {os.environ.get('S3_BUCKETS', '')}", flush=True)
    signal.sigwait(stops)
    server.stop()


if __name__ == "__main__":
    main()
