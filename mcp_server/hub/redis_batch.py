"""Many runs of the hub's scripts in one round trip per Redis server (a cluster blocks scripts in its pipelines)."""

from __future__ import annotations

from typing import Any

from redis.exceptions import AskError, MovedError
from redis.exceptions import ConnectionError as RedisConnectionError

from mcp_server.hub.redis_connection import is_cluster


class ScriptBatch:
    """Script runs queued in a pipeline: one on a single server, one per master that owns their keys on a cluster."""

    def __init__(self, client: Any, scripts: dict[str, Any]) -> None:
        self.client = client
        self.scripts = scripts
        self.pipelines: dict[str, tuple[Any, list[int]]] = {}
        # For each run, in the order added: which pipeline, and its place there.
        self.order: list[tuple[str, int]] = []

    def add(self, name: str, keys: list[str], args: list[Any]) -> None:
        """Queue one run of a script (all its keys in one hash slot, so on one master)."""
        server, target = "", self.client
        if is_cluster(self.client):
            node = self.client.get_node_from_key(keys[0])
            server, target = node.name, node.redis_connection
        if server not in self.pipelines:
            # A plain server's pipeline loads the scripts it lacks before it runs (a promoted replica has none).
            self.pipelines[server] = (target.pipeline(transaction=False), [0])
        pipeline, count = self.pipelines[server]
        self.scripts[name](keys=keys, args=args, client=pipeline)
        self.order.append((server, count[0]))
        count[0] += 1

    def execute(self) -> list[Any]:
        """Run every pipeline; the replies in the order the runs were added."""
        replies: dict[str, list[Any]] = {}
        for server, (pipeline, _) in self.pipelines.items():
            try:
                replies[server] = pipeline.execute()
            except (MovedError, AskError):
                # Slots moved between masters: the cluster client learns the new map on its next command
                # (callers are periodic and try again).
                self.client.nodes_manager.initialize()
                raise RedisConnectionError("Redis Cluster slots moved during a batch") from None
        return [replies[server][place] for server, place in self.order]
