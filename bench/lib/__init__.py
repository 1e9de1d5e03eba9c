"""Helpers of the benchmarks: seeding, the bench settings and floor views, the server and the timer."""
