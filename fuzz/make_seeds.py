#!/usr/bin/env python3
"""make_seeds.py - writes the small seed corpora of the fuzz harnesses:
corpus/checkpoint (valid clgrad checkpoints for fuzz_checkpoint.c's layout,
and a few near misses) and corpus/idx (valid IDX files and near misses).
Run from any directory; the corpora are committed, so this only documents
how they were made."""
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# key, safetensors dtype, element count, element size (fuzz_checkpoint.c)
LAYOUT = [
    ("clgrad.step_block", "U32", 32, 4),
    ("w", "F32", 5, 4),
    ("b", "F32", 3, 4),
    ("empty", "F32", 0, 4),
    ("w.state0", "F32", 5, 4),
    ("w.acc", "BF16", 5, 2),
    ("b.acc", "BF16", 3, 2),
]


def checkpoint(order=None, user=None, micro=1, data_fill=1):
    blobs, header, meta = [], {}, {
        "clgrad.format": "clgrad-checkpoint",
        "clgrad.version": "1",
        "clgrad.optimizer": "adamw",
        "clgrad.micro": str(micro),
        "clgrad.weight_sum": "0x3f800000",
        "clgrad.cycles": "7",
        "clgrad.micro_total": "22",
    }
    entries = LAYOUT if order is None else [LAYOUT[i] for i in order]
    offset = 0
    for i, (key, dtype, count, size) in enumerate(entries):
        data = bytes((data_fill * (i + 1) * 31 + j) & 0xFF for j in range(count * size))
        header[key] = {"dtype": dtype, "shape": [count],
                       "data_offsets": [offset, offset + len(data)]}
        meta["clgrad.crc32." + key] = "%08x" % zlib.crc32(data)
        blobs.append(data)
        offset += len(data)
    meta.update(user or {})
    header = {"__metadata__": meta, **header}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def idx(magic_type, dims, fill=7):
    payload = 1
    for d in dims:
        payload *= d
    head = struct.pack(">BBBB", 0, 0, magic_type, len(dims))
    head += b"".join(struct.pack(">I", d) for d in dims)
    return head + bytes((fill * j) & 0xFF for j in range(payload))


def write(folder, name, data):
    path = os.path.join(HERE, "corpus", folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


def main():
    write("checkpoint", "valid", checkpoint())
    write("checkpoint", "valid_meta", checkpoint(user={"loader.epoch": "3", "rng": "0xdeadbeef"}))
    write("checkpoint", "valid_reordered", checkpoint(order=[6, 5, 4, 3, 2, 1, 0], micro=0))
    good = checkpoint()
    write("checkpoint", "truncated", good[:-5])
    write("checkpoint", "bad_crc", good[:-1] + bytes([good[-1] ^ 1]))
    write("checkpoint", "json_only", struct.pack("<Q", 16) + b'{"a":[1,2]}     ')

    write("idx", "labels", idx(0x08, [10]))
    write("idx", "images", idx(0x08, [3, 4, 5]))
    write("idx", "empty", idx(0x08, [0, 28, 28]))
    write("idx", "four_dims", idx(0x08, [2, 2, 2, 2]))
    write("idx", "truncated", idx(0x08, [3, 4, 5])[:-7])
    write("idx", "float_type", idx(0x0D, [2]))


if __name__ == "__main__":
    main()
