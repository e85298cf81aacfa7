"""One module per command, each with the same shape: ``HELP`` (its line in ``onnxroof --help``),
``EPILOG`` (its examples, if any), ``add_arguments(parser)`` and ``run(args) -> exit code``.
:data:`onnxroof.cli.app.COMMANDS` lists them; a module imports what is slow to import (the
pipeline, the renderers) inside ``run``, so that `--help` and `targets` stay quick."""
