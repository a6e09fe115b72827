"""``python -m omoide`` runs the command line."""

from omoide.cli import main

raise SystemExit(main())
