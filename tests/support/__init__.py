"""Helpers shared by test modules of every layer."""
