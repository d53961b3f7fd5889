"""The bioel_linker component."""
