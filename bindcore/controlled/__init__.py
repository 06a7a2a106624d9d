"""The controlled setting of the paper (§3, §5.2, appendix B, E): scene space and
tokens, the dual encoder, its training loop and the training recipes of each profile."""
