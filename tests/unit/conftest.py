"""Fixtures every unit test module may use: stores of each backend (see tests/support/stores.py)."""

from tests.redis_cluster import redis_cluster  # noqa: F401  (fixture)
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.stores import make_store, redis_stores, store, store_log, task_store  # noqa: F401  (fixtures)
