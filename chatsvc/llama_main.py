"""`python chatsvc/llama_main.py [--safe-cpu] <llama_cpp.server's arguments>`

llama-cpp-python's OpenAI-compatible server, as chatsvc.local_models starts it. With
`--safe-cpu` the model loads without llama.cpp's extra buffer types (no weight
repacking for AMX and the like: chatsvc.local_cpu says why), which neither the
server's command line nor `Llama()` can ask for.

Run as a file, not `-m chatsvc...`: importing the chatsvc package would load the
whole service into the model's process.
"""

from __future__ import annotations

import sys

SAFE_CPU_FLAG = "--safe-cpu"


def without_extra_buffer_types() -> None:
    """Every model loaded from here on gets `use_extra_bufts = false`: `Llama()` starts
    from llama_cpp's `llama_model_default_params()`, looked up when it is called."""
    import llama_cpp.llama_cpp as native

    defaults = native.llama_model_default_params

    def safe_defaults():
        params = defaults()
        params.use_extra_bufts = False
        return params

    native.llama_model_default_params = safe_defaults


def main(argv: list[str]) -> None:
    if SAFE_CPU_FLAG in argv:
        argv = [arg for arg in argv if arg != SAFE_CPU_FLAG]
        without_extra_buffer_types()
        print("chatsvc: loading the model without extra buffer types (safe CPU path)",
              file=sys.stderr, flush=True)
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *argv]
    serve()


if __name__ == "__main__":
    main(sys.argv[1:])
