"""`python -m cnki_mcp` runs the command line."""

from cnki_mcp.cli.main import main

raise SystemExit(main())
