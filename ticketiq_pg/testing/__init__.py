"""Test infrastructure shared by pytest, scripts and benchmarks."""
