"""The lab of spacy-bioel: the harnesses that measure the library (side by side
with scispaCy, index scale, loss ablations, seed tables, reliability runs,
pre-training and BioFEG experiments) and their commands, `python -m bench ...`.

It lives beside the package, not in it: the wheel users install holds the
library and its user commands (`python -m spacy_bioel`), and project.yml calls
the lab from a checkout. Nothing in `spacy_bioel` imports from here.
"""
