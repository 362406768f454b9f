"""A stateful fake of the payment charge service, for tests, demos and benchmarks."""
