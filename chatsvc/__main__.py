import sys

from chatsvc.cli import main

sys.exit(main())
