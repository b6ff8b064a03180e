"""Parses Prometheus text from stdin with the official parser; prints every
sample as JSON: [[name, labels, value], ...], and each family's type."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families

families = list(text_string_to_metric_families(sys.stdin.read()))
print(
    json.dumps(
        {
            "types": {family.name: family.type for family in families},
            "samples": [
                [sample.name, sample.labels, sample.value]
                for family in families
                for sample in family.samples
            ],
        }
    )
)
