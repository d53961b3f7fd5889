"""Training helpers: corpus readers (registered in `spacy_readers`)."""
