"""An exec runner (protocol version 1) that misbehaves on purpose, written with json and numpy
only -- it does not import qconform, which shows that the protocol is language-neutral.

    python3 fault_runner.py MODE

MODE: segv (SIGSEGV during run), abort, hang (never answers run), shape (answers with the wrong
shape), garbage (answers run with text that is not JSON), exit0 (exits 0 during run), version2
(answers hello with protocol version 2), throw (answers {"ok": false}).
"""

import json
import os
import signal
import sys
import time

import numpy as np

MODE = sys.argv[1]
# The numpy type each output format travels as (bf16 and f8 as bit patterns).
NUMPY = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i32": np.int32,
         "i16": np.int16, "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "i4": np.int8, "u4": np.uint8,
         "f8e4m3fn": np.uint8, "f8e5m2": np.uint8}


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main_input(op):
    for key in ("x", "q", "acc", "a", "input"):
        v = op.get(key)
        if isinstance(v, dict) and "values" in v:
            v = v["values"]
        if isinstance(v, dict) and "tensor" in v:
            return v
    raise ValueError("no main input")


def output_dtype(op):
    if "out" in op:
        return op["out"]
    return op["output"]["format"]


for line in sys.stdin:
    req = json.loads(line)
    kind = req["type"]
    if kind == "hello":
        reply({"version": 2 if MODE == "version2" else 1, "name": "fault-" + MODE,
               "description": "misbehaves: " + MODE, "claim": "onnx", "available": True, "reason": "",
               "facts": {"mode": MODE}})
    elif kind == "supports":
        reply({"available": True, "reason": ""})
    elif kind == "run":
        sys.stderr.write("fault runner: run in mode %s\n" % MODE)
        sys.stderr.flush()
        if MODE == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif MODE == "abort":
            os.abort()
        elif MODE == "hang":
            time.sleep(3600)
        elif MODE == "garbage":
            sys.stdout.write("this is not JSON\n")
            sys.stdout.flush()
        elif MODE == "exit0":
            sys.exit(0)
        elif MODE == "throw":
            reply({"ok": False, "error": "no kernel for this"})
        elif MODE == "shape":
            x = main_input(req["op"])
            shape = list(x["shape"]) + [2]
            np.save(os.path.join(req["dir"], "out.npy"), np.zeros(shape, dtype=NUMPY[output_dtype(req["op"])]))
            reply({"ok": True, "output": "out.npy"})
    elif kind == "bye":
        break
