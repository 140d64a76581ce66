"""An offline CNKI: a local HTTP(S) server that behaves like kns/kcms2/navi/bar/login.

Independent of the rest of `cnki_mcp` by design (imports nothing from it), so a round trip
production compiler -> simulator -> production parser checks two implementations."""
