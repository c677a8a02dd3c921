import sys

from iaccode.cli import main

sys.exit(main())
