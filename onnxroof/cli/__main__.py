"""``python -m onnxroof.cli``: the same as the ``onnxroof`` command."""

import sys

from .app import main

sys.exit(main())
