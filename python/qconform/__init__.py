"""qconform: an exact-arithmetic conformance harness for quantized ML kernels.

The compiled core lives in ``qconform._qconform``; this package re-exports it.
"""

from ._qconform import (  # noqa: F401
    __version__,
    InputError,
    presets,
    quantize,
)

__all__ = ["__version__", "InputError", "presets", "quantize"]
