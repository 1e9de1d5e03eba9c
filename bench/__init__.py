"""Benchmarks (run by `make bench`, never by `make test`); helpers live in bench.lib."""
