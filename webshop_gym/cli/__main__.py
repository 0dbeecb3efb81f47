"""``python -m webshop_gym.cli``: the ``webshop-gym`` command."""

import sys

from webshop_gym.cli.app import main

sys.exit(main())
