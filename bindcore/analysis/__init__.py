"""Analyses of embeddings (§3, §4, §5, C.2, D): metrics, probes, binding-function
approximators, the geometry of scene embeddings."""
