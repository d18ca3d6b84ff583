"""Bytes → model + regions + findings, for Puffin files and their blob types."""
