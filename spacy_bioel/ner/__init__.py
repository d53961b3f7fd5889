"""Features for the disease NER that runs before a bioel_linker (issue 44)."""
