#!/usr/bin/env python3
"""test_torch_interop.py - a checkpoint written by clgrad-train opens in other
tools: Python's safetensors (safe_open with numpy) and PyTorch's loader
(safetensors.torch.load_file, on Debian 12's torch 1.13) see every tensor
with its real shape and a dtype they know, and the parameters equal the
trainer's --dump-weights file (little-endian fp32, in model order:
fc1.weight [h1 x in], fc1.bias [h1], fc2.weight, ..., weights row-major
[out x in]).

Run by scripts/check-torch-interop.sh, which trains the run:
    test_torch_interop.py --checkpoint RUN.safetensors --weights WEIGHTS.bin \
        --dims 784,512,256,10
"""
import argparse
import json
import struct
import sys
import unittest
import zlib

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

ARGS = None

# dtypes torch 1.13's safetensors loader maps (no U16/U32/U64 before torch 2.3)
TORCH_113_DTYPES = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"}
HEADER_PREFIX = b'{"__metadata__":{"clgrad.header_crc32":"0x'


def read_header(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    return raw, hlen, json.loads(raw[8:8 + hlen])


def param_names(dims):
    names = []
    for l in range(1, len(dims)):
        names.append(("fc%d.weight" % l, (dims[l], dims[l - 1])))
        names.append(("fc%d.bias" % l, (dims[l],)))
    return names


class TorchInterop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.raw, cls.hlen, cls.header = read_header(ARGS.checkpoint)
        cls.meta = cls.header["__metadata__"]
        cls.params = param_names(ARGS.dims)
        dumped = np.fromfile(ARGS.weights, dtype="<f4")
        cls.dumped, at = {}, 0
        for name, shape in cls.params:
            n = int(np.prod(shape))
            cls.dumped[name] = dumped[at:at + n].reshape(shape)
            at += n
        assert at == dumped.size, "--dump-weights has %d floats, the MLP %d" % (dumped.size, at)

    def test_header(self):
        self.assertEqual(self.meta["clgrad.format"], "clgrad-checkpoint")
        self.assertEqual(self.meta["clgrad.version"], "2")
        # the header CRC, as src/checkpoint.h defines it
        header = self.raw[8:8 + self.hlen]
        self.assertTrue(header.startswith(HEADER_PREFIX))
        p = len(HEADER_PREFIX)
        zeroed = header[:p] + b"00000000" + header[p + 8:]
        self.assertEqual(int(header[p:p + 8], 16), zlib.crc32(self.raw[:8] + zeroed))
        for key, entry in self.header.items():
            if key == "__metadata__":
                continue
            self.assertIn(entry["dtype"], TORCH_113_DTYPES, key)

    def test_safe_open_numpy(self):
        with safe_open(ARGS.checkpoint, framework="np") as f:
            keys = set(f.keys())
            for name, shape in self.params:
                self.assertIn(name, keys)
                t = f.get_tensor(name)
                self.assertEqual(t.shape, shape, name)
                self.assertEqual(t.dtype, np.float32, name)
                np.testing.assert_array_equal(t, self.dumped[name], err_msg=name)
            # the optimizer state and accumulator share the tensor's shape
            for name, shape in self.params:
                for suffix in (".acc", ".state0"):
                    if name + suffix in keys:
                        self.assertEqual(f.get_tensor(name + suffix).shape, shape)
            # the step block: uint32 words stored as int32 (checkpoint.h)
            sb = f.get_tensor("clgrad.step_block")
            self.assertEqual(sb.dtype, np.int32)
            self.assertEqual(sb.shape, (32,))
            words = sb.view(np.uint32)
            self.assertEqual(int(words[5]), int(self.meta["clgrad.updates"]))  # SB_T
            self.assertEqual(f.metadata()["clgrad.updates"], self.meta["clgrad.updates"])

    def test_torch_load_file(self):
        tensors = load_file(ARGS.checkpoint)
        self.assertEqual(set(tensors), set(self.header) - {"__metadata__"})
        for name, shape in self.params:
            t = tensors[name]
            self.assertEqual(tuple(t.shape), shape, name)
            self.assertEqual(t.dtype, torch.float32, name)
            self.assertTrue(torch.equal(t, torch.from_numpy(self.dumped[name].copy())), name)
        self.assertEqual(tensors["clgrad.step_block"].dtype, torch.int32)
        # into an nn.Linear as is: [out, in]
        w = tensors["fc1.weight"]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.load_state_dict({"weight": w, "bias": tensors["fc1.bias"]})


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--weights", required=True, help="clgrad-train --dump-weights file")
    ap.add_argument("--dims", default="784,512,256,10",
                    help="the MLP's widths, input to output (default 784,512,256,10)")
    ARGS, rest = ap.parse_known_args()
    ARGS.dims = [int(d) for d in ARGS.dims.split(",")]
    print("python %s, torch %s, numpy %s, safetensors %s" % (
        sys.version.split()[0], torch.__version__, np.__version__,
        __import__("safetensors").__version__), flush=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
