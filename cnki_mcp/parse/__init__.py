"""parse package."""

# Bumped when the parsers change what they extract: detail and journal pages stored by an older
# version are read again (site-rules.md §3.8). Every writer of a stored detail page passes it.
PARSER_VERSION = 1
