import sys

from ragmetrics.cli import main

sys.exit(main())
