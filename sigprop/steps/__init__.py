"""The workflow's steps: what each rule's job runs (shards, analysis), job helpers and the
committed-evidence store."""
