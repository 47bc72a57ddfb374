"""Fleet builds: many videos at once, in this process or on a Ray cluster, with one writer.

* ``build_fleet`` / ``abuild_fleet`` (``memtools.fleet.build``): the driver.
* ``memtools.fleet.writer``: the one writer's group commit of finished videos.
* ``memtools.builder.bundle_vectors``: the workers embed their videos' texts; the writer checks them.
* ``memtools.fleet.limits``: a limit on requests in flight per model endpoint.
* ``memtools.fleet.ray_runner``: Ray tasks and the endpoint actor (``memtools[ray]``).
* ``memtools.fleet.progress``: videos done / in flight / failed, calls and tokens so far.
"""

from memtools.fleet.build import FleetOptions, FleetSummary, abuild_fleet, build_fleet
from memtools.fleet.limits import LimitedVLM, LocalSlots, SlotStats, endpoint_key
from memtools.fleet.progress import FleetProgress, FleetSnapshot, TextFleetProgress

__all__ = [
    "FleetOptions",
    "FleetProgress",
    "FleetSnapshot",
    "FleetSummary",
    "LimitedVLM",
    "LocalSlots",
    "SlotStats",
    "TextFleetProgress",
    "abuild_fleet",
    "build_fleet",
    "endpoint_key",
]
