"""Run a Python backend class as an exec runner (docs/integrate.md, "Exec runners").

    python3 -m qconform.exec MODULE:CLASS

imports MODULE (found on PYTHONPATH), makes CLASS() with no arguments and serves it on stdin/stdout
with ``qconform.serve`` until the host says bye. ``qconform run --backend py:MODULE:CLASS`` starts
exactly this. Whatever the module prints while it is imported goes to stderr, as everything the
backend prints later does, so it cannot corrupt the protocol.
"""

import importlib
import os
import sys


def _load(target):
    module_name, sep, qualname = target.partition(":")
    if not sep or not module_name or not qualname:
        raise SystemExit("usage: python -m qconform.exec MODULE:CLASS (got %r)" % target)
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m qconform.exec MODULE:CLASS", file=sys.stderr)
        return 2
    # Until serve() takes stdout over, anything printed goes to stderr.
    protocol = os.dup(1)
    os.dup2(2, 1)
    try:
        import qconform

        backend = _load(argv[0])()
        if not isinstance(backend, qconform.Backend):
            print("qconform.exec: %s is not a qconform.Backend" % argv[0], file=sys.stderr)
            return 2
    finally:
        sys.stdout.flush()
        os.dup2(protocol, 1)
        os.close(protocol)
    return qconform.serve(backend)


if __name__ == "__main__":
    sys.exit(main())
