"""The Python facade: `Cluster` (start or find a cluster in a Ray), `Admin` (topics, configs, groups)."""
