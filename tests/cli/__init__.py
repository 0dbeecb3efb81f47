"""Tests of webshop_gym.cli."""
