"""The Redis hub's claims on streams: who holds one, letting go, keeping them fresh, re-taking lost ones."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import gevent
from redis.cluster import RedisCluster

from mcp_server.hub.base import HubUnavailable
from mcp_server.hub.redis_codec import entries_of, milliseconds
from mcp_server.hub.redis_keys import SESSION_INDEX, WORKER_CHANNEL, session_keys

if TYPE_CHECKING:
    from mcp_server.hub.redis_subscription import RedisSubscription

log = logging.getLogger("mcp.hub")

# How long a stream's claim on its session lasts without a refresh, and how often it is refreshed.
ATTACH_TTL_S = 20.0
REFRESH_EVERY_S = 5.0
REFRESH_BATCH = 500


class Claims:
    """RedisHub's refresher and resync (a mixin: it works on the hub's local streams through its connection)."""

    def _refresh_forever(self) -> None:
        """Every few seconds, keep this worker's streams' claims and their sessions alive."""
        # Well inside the session TTL too, so a session with a stream open never expires.
        interval = max(0.1, min(REFRESH_EVERY_S, self.settings.session_ttl_s / 3))
        while True:
            gevent.sleep(interval)
            try:
                self.renew_call_leases()
                self.refresh()
            except HubUnavailable:
                pass  # the subscriber greenlet logs the outage and resyncs when Redis returns
            except Exception:
                log.exception("refreshing stream claims failed")

    def refresh(self) -> None:
        """Refresh every local stream's claim and TTLs; end those whose session is gone or claimed elsewhere."""
        # A stream still attaching holds no claim yet (the one it replaces does): refreshing it would read as
        # "claimed elsewhere" and end it. Its attach sets a fresh claim anyway.
        subscriptions = [subscription for subscription in self.local.values() if subscription.loaded.is_set()]
        for start in range(0, len(subscriptions), REFRESH_BATCH):
            batch = subscriptions[start:start + REFRESH_BATCH]
            with self._redis():
                scripts = self.script_batch()
                for subscription in batch:
                    keys = session_keys(subscription.session_id, subscription.stream)
                    delivered = subscription.delivered if subscription.stream is None else None
                    scripts.add(
                        "refresh",
                        [keys["claim"], keys["session"], keys["replay"], keys["delivered"], keys["detached"],
                         keys["replay_sizes"], keys["replay_bytes"]],
                        [subscription.owner, milliseconds(ATTACH_TTL_S), milliseconds(self.settings.session_ttl_s),
                         delivered or ""],
                    )
                codes = scripts.execute()
                # The sessions whose TTL moved move in the index too (the index is in another hash slot).
                kept = {subscription.session_id for subscription, code in zip(batch, codes, strict=True) if code == 4}
                if kept:
                    self._run("touch", [SESSION_INDEX], [milliseconds(self.settings.session_ttl_s), *sorted(kept)])
            for subscription, code in zip(batch, codes, strict=True):
                if code == 0:
                    self._drop(subscription, "session closed")
                elif code == 3:
                    self._drop(subscription, "replaced by a newer stream")
                elif code == 2 and self.local.get(subscription.key) is subscription:
                    self._reclaim(subscription)

    def _reclaim(self, subscription: RedisSubscription) -> None:
        """Take back a claim that vanished (Redis restarted, or was away past the claim's TTL) and catch up."""
        claim = session_keys(subscription.session_id, subscription.stream)["claim"]
        with self._redis():
            self.client.set(claim, subscription.owner, px=milliseconds(ATTACH_TTL_S), nx=True)
        if self.local.get(subscription.key) is not subscription:
            self._detach(subscription)  # it closed while the claim was being re-taken: let go again
            return
        gevent.spawn(self._resync_quietly, subscription)

    def _resync_all(self) -> None:
        """After (re)subscribing, re-claim every local stream and queue what it missed meanwhile."""
        try:
            self.refresh()
        except HubUnavailable:
            pass  # the refresher tries again; every stream still catches up (and stops holding live events)
        except Exception:
            log.exception("refreshing stream claims failed")
        for subscription in list(self.local.values()):
            try:
                self._resync(subscription)
            except HubUnavailable:
                pass
            except Exception:
                log.exception("resynchronising the stream of session %s failed", subscription.session_id[:8])

    def _resync_quietly(self, subscription: RedisSubscription) -> None:
        """Catch one stream up, leaving outages to the subscriber greenlet to report."""
        try:
            self._resync(subscription)
        except HubUnavailable:
            pass

    def _resync(self, subscription: RedisSubscription) -> None:
        """Queue the replay entries a stream has not queued yet."""
        subscription.loaded.wait(self.settings.redis_timeout_s * 2)
        if self.local.get(subscription.key) is not subscription or not subscription.loaded.is_set():
            return
        ms, seq = subscription.last_queued
        start = f"({ms}-{seq}" if (ms, seq) != (0, 0) else "-"
        subscription.hold()
        try:
            with self._redis():
                raw = self.client.xrange(session_keys(subscription.session_id)["replay"], start, "+")
        except BaseException:
            subscription.fill([])
            raise
        subscription.fill(entries_of(raw, subscription.stream), bounded=True)

    def _claim_holder_alive(self, claim: str) -> list[str]:
        """On a cluster, the attach script's last argument: the worker holding the claim if it is alive, else ''.

        Elsewhere nothing: the script asks PUBSUB NUMSUB itself, which on a cluster counts one node's subscribers.
        """
        if not self.settings.redis_cluster:
            return []
        holder = self.client.get(claim)
        if holder is None:
            return [""]
        worker = holder.decode().partition("|")[0]
        subscribers = dict(self.client.pubsub_numsub(WORKER_CHANNEL + worker, target_nodes=RedisCluster.ALL_NODES))
        return [worker if subscribers.get((WORKER_CHANNEL + worker).encode(), 0) > 0 else ""]

    def _detach(self, subscription: RedisSubscription) -> None:
        """Let go of the claim; the session's own stream records what it delivered and starts the resume window."""
        keys = session_keys(subscription.session_id, subscription.stream)
        try:
            with self._redis():
                self._run(
                    "detach",
                    [keys["claim"], keys["delivered"], keys["session"], keys["replay"], keys["detached"],
                     keys["replay_sizes"], keys["replay_bytes"]],
                    [subscription.owner, subscription.delivered or "", int(self.settings.resume_window_s * 1000),
                     "1" if subscription.stream is None else "0"],
                )
        except HubUnavailable:
            log.info("could not release stream of session %s: Redis unreachable", subscription.session_id[:8])
