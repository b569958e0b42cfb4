"""What a run produced and what it means: the events a run yields, the views folded from
them, the figures (histograms, summaries), the store that keeps them, and the judgements read
from them (what limited a step, `--fail-on` checks, a rate search's rules, server refusals).
Nothing here runs load: the engine writes results, the faces and the reports read them."""
