"""Python backends with each fault a backend can have (the twin of tests/plugins/fault_kernel.hpp),
for python/tests/test_fault_routes.py: py-FAULT, quantize only, importable by class from their own
process (python -m qconform.exec fault_backends:CLASS). Without a fault: ONNX QuantizeLinear."""

import ctypes
import os
import time

import numpy as np

import qconform


class _Fault(qconform.Backend):
    FAULT = None

    def name(self):
        return "py-" + self.FAULT

    def description(self):
        return "a planted fault"

    def claim(self):
        return "onnx"

    def supports(self, op):
        return op.kind == "quantize"

    def run(self, op):
        self.fault(op)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            q = np.rint(op.x / op.element_scales().astype(np.float32)) + op.element_zero_points()
        info = qconform.format_info(op.dtype)
        return np.clip(np.nan_to_num(q), info.int_min, info.int_max).astype(info.numpy_dtype)

    def fault(self, op):
        raise NotImplementedError


class Segv(_Fault):
    FAULT = "segv"

    def fault(self, op):
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class Abort(_Fault):
    FAULT = "abort"

    def fault(self, op):
        os.abort()


class Hang(_Fault):
    FAULT = "hang"

    def fault(self, op):
        time.sleep(3600)


class _Exit(_Fault):
    STATUS = None

    def fault(self, op):
        os._exit(self.STATUS)  # no exception, no atexit: the process is simply gone


class Exit0(_Exit):
    FAULT, STATUS = "exit0", 0


class Exit1(_Exit):
    FAULT, STATUS = "exit1", 1


class WrongShape(_Fault):
    FAULT = "wrong-shape"

    def run(self, op):
        return np.zeros(op.x.size + 1, np.int8)


class WrongDtype(_Fault):
    FAULT = "wrong-dtype"

    def run(self, op):
        return np.full(op.x.shape, 0.5, np.float32)


class Throws(_Fault):
    FAULT = "throws"

    def fault(self, op):
        raise RuntimeError("the kernel refused")


class HugeAlloc(_Fault):
    FAULT = "huge-alloc"

    def fault(self, op):
        np.ones(1 << 50, np.uint8)  # 1 PiB: more than any address space, a MemoryError


ALL = [Segv, Abort, Hang, Exit0, Exit1, WrongShape, WrongDtype, Throws, HugeAlloc]


class BadSupports(_Fault):
    FAULT = "bad-supports"

    def supports(self, op):
        return 42
