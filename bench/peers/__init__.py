"""Servers the benchmark compares ours with: the official SDK's, and a bare Flask floor."""
