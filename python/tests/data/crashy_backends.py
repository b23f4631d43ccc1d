"""Python backends that fault in the interpreter itself, for run_cases(isolate=True): imported by
class from their own process (python -m qconform.exec crashy_backends:CLASS)."""

import ctypes
import os
import time

import numpy as np

import qconform


class _Base(qconform.Backend):
    def description(self):
        return "faults on purpose"

    def claim(self):
        return "onnx"

    def supports(self, op):
        return op.kind == "quantize"


class SegfaultQuantize(_Base):
    def name(self):
        return "segfault-quantize"

    def run(self, op):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return np.zeros(op.x.shape, np.int8)


class AbortQuantize(_Base):
    def name(self):
        return "abort-quantize"

    def run(self, op):
        os.abort()


class HangQuantize(_Base):
    def name(self):
        return "hang-quantize"

    def run(self, op):
        time.sleep(3600)


class BadSupports(_Base):
    def name(self):
        return "bad-supports"

    def supports(self, op):
        return 42
