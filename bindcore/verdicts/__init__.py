"""The paper's claims as rules next to the data they judge, and what the reproduction
report makes of their verdicts: each claim function takes a chapter's results and
answers shown, not shown or cannot be tested at this profile, with the rule and its
thresholds. Nothing here trains or fits; the chapters and the report hand it results.
"""
