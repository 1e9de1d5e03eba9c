"""The websocket channel layer on Redis: channels-redis's layer, with a frame's groups sent together.

channels-redis sends to one group at a time in four round trips: the group's expired members
trimmed, its members read, their channels' expired messages trimmed, the message added. A frame goes
to two groups (the visitor's room and the widget's consoles), so a push paid eight round trips on
the web server's event loop: about a tenth of a web process's CPU per message sent.

`group_send_many` sends one message to several groups in two round trips per Redis host: one
pipeline trims and reads every group's members, one script trims and fills every member's channel.
A group without members costs only the first. What reaches each channel is what `group_send` puts
there, group by group (a channel in two groups gets the message twice, as before): the same
serialized message per channel key, the same expiry, capacity and trimming, done in the script in
the order channels-redis does them.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict

from channels_redis import core

logger = logging.getLogger(__name__)

# KEYS: the channel keys (one per group and key, in order); ARGV: their messages, their capacities,
# then the time, the channels' expiry and the score below which a channel's messages are expired.
_SEND = """
local n = #KEYS
local now = ARGV[2 * n + 1]
local expiry = ARGV[2 * n + 2]
local stale = ARGV[2 * n + 3]
local over_capacity = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, stale)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[n + i]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""


class RedisChannelLayer(core.RedisChannelLayer):
    async def group_send(self, group, message):
        await self.group_send_many([group], message)

    async def group_send_many(self, groups: list[str], message: dict) -> None:
        """Send `message` to every member of each group."""
        for group in groups:
            assert self.require_valid_group_name(group), "Group name not valid"
        members = await self._members(groups)
        keys: dict[int, list] = defaultdict(list)
        messages: dict[int, list] = defaultdict(list)
        capacities: dict[int, list] = defaultdict(list)
        for channel_names in members:
            by_host, key_message, key_capacity = self._map_channel_keys_to_connection(channel_names, message)
            for index, channel_keys in by_host.items():
                keys[index] += channel_keys
                messages[index] += [key_message[key] for key in channel_keys]
                capacities[index] += [key_capacity[key] for key in channel_keys]
        for index, channel_keys in keys.items():
            now = time.time()
            over_capacity = await self.connection(index).eval(
                _SEND,
                len(channel_keys),
                *channel_keys,
                *messages[index],
                *capacities[index],
                now,
                self.expiry,
                int(now) - int(self.expiry),
            )
            if over_capacity > 0:
                logger.info("%s of %s channels over capacity in groups %s", over_capacity, len(channel_keys), groups)

    async def _members(self, groups: list[str]) -> list[list[str]]:
        """Each group's unexpired members (its expired ones removed), one pipeline per host."""
        by_host: dict[int, list[int]] = defaultdict(list)
        for position, group in enumerate(groups):
            by_host[self.consistent_hash(group)].append(position)
        members: list[list[str]] = [[] for _ in groups]
        for index, positions in by_host.items():
            pipe = self.connection(index).pipeline(transaction=False)
            for position in positions:
                key = self._group_key(groups[position])
                pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
                pipe.zrange(key, 0, -1)
            replies = await pipe.execute()
            for position, names in zip(positions, replies[1::2], strict=True):
                members[position] = [name.decode("utf8") for name in names]
        return members
