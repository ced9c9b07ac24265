"""The Redis channel layer with a bounded pool that queues a burst instead of failing it.

channels_redis keeps one redis-py pool per event loop and host (its RedisLoopLayer), made by `create_pool` from
the host's dict: `address` is the URL, every other key goes to the pool and its connections. Every socket of a
daphne process shares that pool (daphne runs one loop), and a command borrows a connection only while it runs.
redis-py's plain ConnectionPool raises MaxConnectionsError once `max_connections` (100 by default) are in use,
so a few hundred sockets opened together failed to join their groups. A BlockingConnectionPool makes a command
wait up to `timeout` seconds for a free connection instead, so the pool stays small and a burst only queues.
"""

from __future__ import annotations

from channels_redis.core import RedisChannelLayer
from redis.asyncio import BlockingConnectionPool


class PooledRedisChannelLayer(RedisChannelLayer):
    def create_pool(self, index):
        host = dict(self.hosts[index])
        return BlockingConnectionPool.from_url(host.pop("address"), **host)
