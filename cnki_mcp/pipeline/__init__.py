"""Research search orchestration: talks to a `SiteBackend`, the store and the jobs layer."""
