"""``python -m rocketmq_actors`` runs the command-line interface."""

from rocketmq_actors.cli import main

raise SystemExit(main())
