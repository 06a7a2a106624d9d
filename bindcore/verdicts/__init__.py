"""The paper's claims as rules next to the data they judge, and what the reproduction
report makes of their verdicts. A claim function takes a chapter's results and answers,
per claim and subject, shown, not shown or cannot be tested at this profile, with the
rule and its thresholds. Nothing here trains or fits: the chapters and the report hand
it results (``tests/test_layout.py``).

* :mod:`~bindcore.verdicts.core`: the statuses, the kinds of evidence, a claim row's
  columns, the counts and sentences made from claim frames;
* the claims, by the data they judge: :mod:`~bindcore.verdicts.geometry` (§4, D.1, D.2:
  embedding sets), :mod:`~bindcore.verdicts.approximators` (§5.1, §5.3, §5.4, figure 9:
  approximator tables), :mod:`~bindcore.verdicts.generalization` (§5.2: the sweep's
  summary), :mod:`~bindcore.verdicts.additional` (D.3-D.5: occlusion, natural images,
  MDS grids), :mod:`~bindcore.verdicts.pixels` (appendix E and the D.7 contrast);
* the report's: :mod:`~bindcore.verdicts.outcomes` (per headline finding, reproduced or
  not), :mod:`~bindcore.verdicts.comparison` (the paper's numbers beside ours: like for
  like, substitute, not run), :mod:`~bindcore.verdicts.deviations` (the recipe's
  departures from the paper and the released code), :mod:`~bindcore.verdicts.report`
  (the gathered results as claims, the comparison and the outcome table).
"""
