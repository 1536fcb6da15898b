"""`python -m shiftbox_servers DOMAIN …` is `shiftbox-server DOMAIN …`."""

import sys

from shiftbox_servers.kit.cli import main

sys.exit(main())
