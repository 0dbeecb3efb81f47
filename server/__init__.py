"""The Flask human-play server (installed as ``webshop_gym.server``)."""
