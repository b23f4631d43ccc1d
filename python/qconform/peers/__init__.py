"""Peer backends: the real libraries people ship on, run as qconform backends (docs/peers.md)."""
