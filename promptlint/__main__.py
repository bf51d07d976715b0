"""``python -m promptlint`` runs the command line."""

from promptlint.cli import main

main()
