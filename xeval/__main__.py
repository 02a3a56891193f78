import sys

from xeval.cli import main

sys.exit(main())
