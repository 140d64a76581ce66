"""Page renderers of the simulated CNKI: pure functions from corpus records to HTML or file bytes.

The server (routes, tokens, cookies, faults) calls these; every URL comes from `Links`. The markup
reproduces the structure of pages saved from the real site (kcms2 2026 detail, ECP login modal,
verify blockPuzzle, bar htmlread); every corpus string is escaped."""
