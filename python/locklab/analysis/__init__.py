"""From stored runs to judgements: statistics, the metrics a table can show, cells and
verdicts, and the series that the report and the figures draw."""
