#!/usr/bin/env python3
"""gen_quant_fixtures.py - writes the fixtures of clgrad's quantized optimizer
states from bitsandbytes (tests/golden/bnb_*.bin), which tests/test_qstate_bnb.c
replays:

  bnb_maps.bin       the maps: create_dynamic_map(signed=True) and (signed=False)
                     (8-bit), create_dynamic_map(True, 3, 4) without its padding
                     zeros and linspace(0, 1, 17)[1:] (torchao's 4-bit maps).
  bnb_blockwise.bin  quantize_blockwise / dequantize_blockwise of a few blocks
                     (the 8-bit maps with blocks of 256; the 4-bit maps with
                     blocks of 128), with a partial last block, a block of
                     zeros, magnitudes over 7 decades; for the unsigned maps
                     the squares g * g of the values g recorded with them. Codes from bitsandbytes'
                     portable quantizer (nearest map value, as its CUDA kernel),
                     and, for comparison, from its CPU-native one.
  bnb_adamw8bit.bin  four steps of bitsandbytes.optim.AdamW8bit on a tensor of
                     4396 elements (8-bit states: 18 blocks, the last partial)
                     and one of 100 (below min_8bit_size: fp32 states).

File format (little-endian): b"CLGQFIX1", then named arrays
    u32 name_length, name (ASCII), u32 type (0 f32, 1 u8), u32 count, data
and b"END!". Names are listed in tests/golden/README.md.

bitsandbytes' CPU backend quantizes with a native approximation that is not
always the nearest map value (measured: 0.15% of codes of the signed map and
3% of the unsigned one differ from the nearest); its portable kernel
(the CompositeExplicitAutograd registration of
bitsandbytes::quantize_blockwise, bucketize over the fp32 midpoints) is the
nearest, as the CUDA kernel. The optimizer fixture therefore runs AdamW8bit with
quantize_blockwise dispatched to the portable kernel; the blockwise fixture
records both.

Usage:
    python3 tests/golden/gen_quant_fixtures.py --out tests/golden/
It needs torch and bitsandbytes (tests/golden/README.md says which versions).
"""

import argparse
import os
import struct
import sys

import numpy as np
import torch

import bitsandbytes as bnb
import bitsandbytes.functional as F

MAGIC = b"CLGQFIX1"
TRAILER = b"END!"
F32, U8 = 0, 1


class Writer:
    def __init__(self):
        self.buf = bytearray(MAGIC)

    def add(self, name, array, kind):
        data = np.ascontiguousarray(array, dtype="<f4" if kind == F32 else "u1")
        nb = name.encode("ascii")
        self.buf += struct.pack("<I", len(nb)) + nb
        self.buf += struct.pack("<II", kind, data.size) + data.tobytes()

    def save(self, path):
        self.buf += TRAILER
        with open(path, "wb") as f:
            f.write(self.buf)
        return len(self.buf)


def maps():
    s8 = F.create_dynamic_map(signed=True)
    u8 = F.create_dynamic_map(signed=False)
    s4 = torch.tensor(sorted(set(F.create_dynamic_map(True, 3, 4).tolist())),
                      dtype=torch.float32)
    u4 = torch.linspace(0, 1, 17, dtype=torch.float32)[1:]
    assert s4.numel() == 16 and u4.numel() == 16
    return {"q8_signed": s8, "q8_unsigned": u8, "q4_signed": s4, "q4_unsigned": u4}


_PORTABLE = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)


def quantize_portable(x, code, blocksize):
    """bitsandbytes' own portable quantize_blockwise (nearest map value)."""
    op = torch.ops.bitsandbytes.quantize_blockwise.default
    return op.redispatch(_PORTABLE, x.contiguous(), code, blocksize)


def spread(rng, n):
    """Magnitudes over 7 decades, random signs, some zeros."""
    mag = 10.0 ** (-7.0 * rng.random(n))
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    x = (mag * sign).astype(np.float32)
    x[rng.random(n) < 1 / 64] = 0
    return x


def blockwise(w, qmaps, rng):
    for name, code in qmaps.items():
        block = 256 if name.startswith("q8") else 128
        n = 5 * block + block // 3  # a partial last block
        g = spread(rng, n)
        g[block:2 * block] = 0  # a block of zeros
        # the unsigned maps quantize squares, as v = g * g (fp32) is
        x = (g * g).astype(np.float32) if name.endswith("unsigned") else g
        xt = torch.from_numpy(x)
        w.add(name + ".g", g, F32)
        q, absmax = quantize_portable(xt, code, block)
        deq = F.dequantize_blockwise(q, absmax=absmax, code=code, blocksize=block)
        w.add(name + ".x", x, F32)
        w.add(name + ".codes", q.numpy(), U8)
        w.add(name + ".absmax", absmax.numpy(), F32)
        w.add(name + ".dequantized", deq.numpy(), F32)
        if name.startswith("q8"):
            qn, qstate = F.quantize_blockwise(xt, code=code, blocksize=block)
            assert torch.equal(qstate.absmax, absmax)
            w.add(name + ".codes_cpu_native", qn.numpy(), U8)
            differ = int((qn != q).sum())
            print("  %s: CPU-native codes differ from the nearest in %d of %d" % (name, differ, n))


def adamw8bit(w, rng):
    """Four AdamW8bit steps, the quantizer dispatched to the portable kernel."""
    lib = torch.library.Library("bitsandbytes", "IMPL")  # noqa: F841 (kept alive)
    lib.impl("quantize_blockwise", quantize_portable, "CPU")
    sizes = (4396, 100)
    params = [torch.nn.Parameter(torch.from_numpy(rng.uniform(-1, 1, s).astype(np.float32)))
              for s in sizes]
    for i, p in enumerate(params):
        w.add("adamw.p0.%d" % i, p.detach().numpy().copy(), F32)
    opt = bnb.optim.AdamW8bit(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                              weight_decay=1e-2, min_8bit_size=4096)
    for step in range(4):
        for i, p in enumerate(params):
            g = (rng.standard_normal(p.numel()) * 10.0 ** rng.uniform(-3, 0, p.numel()))
            p.grad = torch.from_numpy(g.astype(np.float32))
            w.add("adamw.g.%d.%d" % (step, i), p.grad.numpy().copy(), F32)
        opt.step()
        for i, p in enumerate(params):
            s = opt.state[p]
            w.add("adamw.p.%d.%d" % (step, i), p.detach().numpy().copy(), F32)
            if "absmax1" in s:
                w.add("adamw.m.%d.%d" % (step, i), s["state1"].numpy().copy(), U8)
                w.add("adamw.v.%d.%d" % (step, i), s["state2"].numpy().copy(), U8)
                w.add("adamw.m_absmax.%d.%d" % (step, i), s["absmax1"].numpy().copy(), F32)
                w.add("adamw.v_absmax.%d.%d" % (step, i), s["absmax2"].numpy().copy(), F32)
            else:
                w.add("adamw.m.%d.%d" % (step, i), s["state1"].numpy().copy(), F32)
                w.add("adamw.v.%d.%d" % (step, i), s["state2"].numpy().copy(), F32)
    assert opt.state[params[0]]["state1"].dtype == torch.uint8
    assert opt.state[params[1]]["state1"].dtype == torch.float32


def c_maps(qmaps):
    """The maps as C initializers (for a look at clgrad's src/qmaps.c)."""
    for name, code in qmaps.items():
        vals = ["%sf" % float.hex(float(v)) for v in code.tolist()]
        print("/* %s */" % name)
        for i in range(0, len(vals), 4):
            print("    " + ", ".join(vals[i:i + 4]) + ",")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--c-maps", action="store_true", help="print the maps as C and exit")
    args = ap.parse_args()
    qmaps = maps()
    if args.c_maps:
        c_maps(qmaps)
        return 0
    print("bitsandbytes %s, torch %s, numpy %s" % (bnb.__version__, torch.__version__,
                                                    np.__version__))
    w = Writer()
    for name, code in qmaps.items():
        w.add(name, code.numpy(), F32)
    print("bnb_maps.bin: %d bytes" % w.save(os.path.join(args.out, "bnb_maps.bin")))
    w = Writer()
    blockwise(w, qmaps, np.random.default_rng(20240611))
    print("bnb_blockwise.bin: %d bytes" % w.save(os.path.join(args.out, "bnb_blockwise.bin")))
    w = Writer()
    adamw8bit(w, np.random.default_rng(20240612))
    print("bnb_adamw8bit.bin: %d bytes" % w.save(os.path.join(args.out, "bnb_adamw8bit.bin")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
