"""Pure query building: the structured-search expression tree (`expr`), its compilation to CNKI's
QueryJson (`compiler`) and concept planning for the research search (`plan`)."""
