"""The commands that live in their own module (slow to import: numpy kernels, onnxruntime). Each
has ``HELP``, ``add_arguments(parser)`` and ``run(args) -> exit code``; ``cli.py`` adds them."""
