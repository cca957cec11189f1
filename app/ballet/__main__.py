import sys

from ballet.cli import main

sys.exit(main())
