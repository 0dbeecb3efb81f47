"""``python -m webshop_gym.cli``: the ``webshop-gym`` command."""

import sys

from webshop_gym.cli.main import main

sys.exit(main())
