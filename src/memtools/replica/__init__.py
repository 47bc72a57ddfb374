"""Read replicas: a memory published to object storage and served read-only on other machines.

``publish(folder, "s3://bucket/prefix")`` writes the memory's next version (``memtools publish``);
``ReplicaTools("s3://bucket/prefix")`` serves the latest one and moves to each newer one
(``memtools serve --memory s3://bucket/prefix``). The layout and the guarantees are in
``memtools.replica.snapshot`` and docs/scaling.md ("Read replicas").
"""

from memtools.replica.bucket import Bucket, is_replica_uri
from memtools.replica.publish import DEFAULT_KEEP, Published, publish

__all__ = ["DEFAULT_KEEP", "Bucket", "Published", "is_replica_uri", "publish"]
