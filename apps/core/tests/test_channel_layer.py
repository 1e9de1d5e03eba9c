"""apps.core.channel_layer.RedisChannelLayer: a frame's groups sent together, each channel getting
what channels-redis's own group_send puts there."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from apps.core.channel_layer import RedisChannelLayer

pytestmark = pytest.mark.redis


class _Counting:
    """A Redis client that counts the round trips made through it (pipelines executed, scripts)."""

    def __init__(self, client, trips: list) -> None:
        self._client, self._trips = client, trips

    def pipeline(self, **kwargs):
        pipe = self._client.pipeline(**kwargs)
        execute = pipe.execute

        async def counted():
            self._trips.append("pipeline")
            return await execute()

        pipe.execute = counted
        return pipe

    async def eval(self, *args):
        self._trips.append("eval")
        return await self._client.eval(*args)


def _layer(settings, hosts=None, **config) -> RedisChannelLayer:
    return RedisChannelLayer(hosts=hosts or [settings.REDIS_URL], prefix=f"test-{uuid.uuid4().hex[:8]}", **config)


def _run(layer, scenario):
    """Run `scenario(layer)` on a loop of its own; the layer's connections are closed with it."""

    async def run():
        try:
            return await scenario(layer)
        finally:
            await layer.flush()

    return asyncio.run(run())


async def _received(layer, channel, timeout=2.0):
    """Every message waiting in `channel`, then nothing more within a short wait."""
    got = []
    while True:
        try:
            got.append(await asyncio.wait_for(layer.receive(channel), timeout if not got else 0.3))
        except TimeoutError:
            return got


def _count_trips(layer, monkeypatch) -> list:
    trips: list = []
    connection = layer.connection
    monkeypatch.setattr(layer, "connection", lambda index: _Counting(connection(index), trips))
    return trips


def test_a_frame_reaches_every_member_of_each_group_in_two_round_trips(settings, monkeypatch):
    # given a visitor's socket in the room's group, two consoles in the widget's group, one socket in
    # both, and one in neither
    layer = _layer(settings)

    async def scenario(layer):
        visitor, console_a, console_b, both, outsider = [await layer.new_channel() for _ in range(5)]
        for group, channel in [
            ("chat.1", visitor),
            ("widget.1", console_a),
            ("widget.1", console_b),
            ("chat.1", both),
            ("widget.1", both),
            ("chat.2", outsider),
        ]:
            await layer.group_add(group, channel)
        trips = _count_trips(layer, monkeypatch)

        # when one frame is sent to the room's and the widget's groups
        await layer.group_send_many(["chat.1", "widget.1"], {"type": "push", "frame": {"n": 1}})
        monkeypatch.undo()

        # then each member got it once per group it is in, the outsider nothing, in two round trips
        assert trips == ["pipeline", "eval"]
        got = {
            name: await _received(layer, channel)
            for name, channel in [
                ("visitor", visitor),
                ("console_a", console_a),
                ("console_b", console_b),
                ("both", both),
                ("outsider", outsider),
            ]
        }
        assert {name: [m["frame"]["n"] for m in messages] for name, messages in got.items()} == {
            "visitor": [1],
            "console_a": [1],
            "console_b": [1],
            "both": [1, 1],
            "outsider": [],
        }
        assert got["visitor"] == [{"type": "push", "frame": {"n": 1}}]

    _run(layer, scenario)


def test_groups_without_members_cost_one_round_trip(settings, monkeypatch):
    layer = _layer(settings)

    async def scenario(layer):
        trips = _count_trips(layer, monkeypatch)
        await layer.group_send_many(["chat.5", "widget.5"], {"type": "push", "frame": {}})
        assert trips == ["pipeline"]

    _run(layer, scenario)


def test_group_send_is_group_send_many_of_one_group(settings):
    layer = _layer(settings)

    async def scenario(layer):
        channel = await layer.new_channel()
        await layer.group_add("chat.3", channel)
        await layer.group_send("chat.3", {"type": "push", "frame": {"n": 3}})
        assert await _received(layer, channel) == [{"type": "push", "frame": {"n": 3}}]

    _run(layer, scenario)


def test_an_expired_member_is_removed_and_gets_nothing(settings):
    # given a group whose one member joined longer ago than the group expiry
    layer = _layer(settings, group_expiry=60)

    async def scenario(layer):
        stale, fresh = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("chat.4", stale)
        await layer.group_add("chat.4", fresh)
        client = layer.connection(layer.consistent_hash("chat.4"))
        await client.zadd(layer._group_key("chat.4"), {stale: 1})  # joined at the epoch

        # when
        await layer.group_send_many(["chat.4"], {"type": "push", "frame": {}})

        # then only the fresh member got it and the stale one left the group
        assert len(await _received(layer, fresh)) == 1
        assert await _received(layer, stale, timeout=0.3) == []
        members = await client.zrange(layer._group_key("chat.4"), 0, -1)
        assert [m.decode() for m in members] == [fresh]

    _run(layer, scenario)


def test_a_full_channel_gets_no_more_and_the_drop_is_logged(settings, caplog):
    # given a channel of capacity 1 that already holds a message
    layer = _layer(settings, capacity=1)

    async def scenario(layer):
        channel = await layer.new_channel()
        await layer.group_add("widget.6", channel)
        await layer.group_send_many(["widget.6"], {"type": "push", "frame": {"n": 1}})

        # when a second frame is sent before the socket reads
        with caplog.at_level(logging.INFO, logger="apps.core.channel_layer"):
            await layer.group_send_many(["widget.6"], {"type": "push", "frame": {"n": 2}})

        # then the socket reads only the first, and the drop is in the log
        assert [m["frame"]["n"] for m in await _received(layer, channel)] == [1]
        assert any("over capacity" in r.getMessage() for r in caplog.records)

    _run(layer, scenario)


def test_groups_on_two_hosts_are_each_sent_on_their_own(settings):
    # given two Redis "hosts" (two databases of the test server) and two groups hashed to different ones
    base = settings.REDIS_URL.rsplit("/", 1)[0]
    layer = _layer(settings, hosts=[f"{base}/14", f"{base}/15"])
    groups = [f"chat.{n}" for n in range(1, 50)]
    first = next(g for g in groups if layer.consistent_hash(g) == 0)
    second = next(g for g in groups if layer.consistent_hash(g) == 1)

    async def scenario(layer):
        a, b = await layer.new_channel(), await layer.new_channel()
        await layer.group_add(first, a)
        await layer.group_add(second, b)

        # when one frame goes to both
        await layer.group_send_many([first, second], {"type": "push", "frame": {"n": 7}})

        # then each member has it
        assert [m["frame"]["n"] for m in await _received(layer, a)] == [7]
        assert [m["frame"]["n"] for m in await _received(layer, b)] == [7]

    _run(layer, scenario)
