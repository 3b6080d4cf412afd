"""Which of slo.generate.expected()'s closed-form totals each default event SLO counts, as (good, total)."""

FIELDS = {"write-availability": ("produce_successes", "produce_attempts"),
          "read-availability": ("records_on_time", "records_expected"),
          "e2e-latency": ("latency_good", "latency_samples"),
          "no-loss": ("records_not_lost", "records_expected")}
