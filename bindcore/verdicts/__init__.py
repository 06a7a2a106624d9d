"""The paper's claims as rules judging a chapter's results (shown, not shown, not testable),
and what the reproduction report makes of their verdicts. Nothing here trains or fits.

The chapters import from here what they use."""

from .additional import additional_claims, natural_claims
from .approximators import (
    figure9_claims,
    form_claims,
    form_sentences,
    pretrained_claims,
    pretrained_sentences,
    width_claims,
)
from .comparison import GROUPS, comparison_table, summary_line
from .core import claim_outcomes, closing_sentence, support_text
from .deviations import paper_deviations, release_deviations
from .generalization import (
    RULE_CHANGES,
    claim_support,
    claims_table,
    generalization_claim_rules,
    transition_table,
)
from .geometry import attribution_claims, geometry_claims
from .outcomes import outcome_summary, pixel_frame
from .pixels import d7_contrast, pixel_claim_rules, pixel_claims, pixel_form_sentences
from .report import claims_overview, gather, report_parameters

__all__ = [
    "GROUPS", "RULE_CHANGES", "additional_claims", "attribution_claims", "claim_outcomes", "claim_support",
    "claims_overview", "claims_table", "closing_sentence", "comparison_table", "d7_contrast",
    "figure9_claims", "form_claims", "form_sentences", "gather", "generalization_claim_rules",
    "geometry_claims", "natural_claims", "outcome_summary", "paper_deviations", "pixel_claim_rules",
    "pixel_claims", "pixel_form_sentences", "pixel_frame", "pretrained_claims", "pretrained_sentences",
    "release_deviations", "report_parameters", "summary_line", "support_text", "transition_table",
    "width_claims",
]
