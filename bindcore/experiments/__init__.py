"""The paper's experiments as the chapters run them: the science composed with a chapter's
parameters (the models and sets it trains, embeds and fits, and their tables). Nothing
here imports :mod:`bindcore.book`, which formats and judges what these return."""
