"""Tests of webshop_gym.data.synth."""
