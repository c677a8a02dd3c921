"""``python -m acp_conformance``: the same as the ``acp-conformance`` command."""

import sys

from acp_conformance.cli import main

sys.exit(main())
