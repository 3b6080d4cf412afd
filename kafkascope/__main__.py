"""`python -m kafkascope`"""

import sys

from kafkascope.cli import main

sys.exit(main())
