"""The paper's claims as rules judging a chapter's results (shown, not shown, not testable),
and what the reproduction report makes of their verdicts. Nothing here trains or fits."""
