"""Fixtures every unit test module may use: hubs of each backend (see tests/support/hubs.py)."""

from tests.redis_cluster import redis_cluster  # noqa: F401  (fixture)
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.hubs import hub, hub_log, make_hub, redis_hubs, task_store  # noqa: F401  (fixtures)
