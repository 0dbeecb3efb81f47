"""Tests of webshop_gym.synth."""
