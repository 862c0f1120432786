#!/usr/bin/env python3
"""make_seeds.py - writes the small seed corpora of the fuzz harnesses:
corpus/checkpoint (valid clgrad checkpoints, format version 2, for
fuzz_checkpoint.c's layout and configuration, and a few near misses) and
corpus/idx (valid IDX files and near misses) and corpus/tuning (a CLBlast
tuning file of clgrad-tune's and near misses). Run from any directory; the
corpora are committed, so this only documents how they were made. The
checkpoint writer here follows src/checkpoint_format.h: the header begins with the
clgrad.header_crc32 field, whose CRC-32 covers the 8 length bytes and the
header with its 8 digits taken as '0'."""
import json
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# key, safetensors dtype, shape, element size (fuzz_checkpoint.c)
LAYOUT = [
    ("clgrad.step_block", "I32", [32], 4),
    ("w", "F32", [5, 1], 4),
    ("b", "F32", [3], 4),
    ("empty", "F32", [0], 4),
    ("w.state0", "F32", [5, 1], 4),
    ("w.acc", "BF16", [5, 1], 2),
    ("b.acc", "BF16", [3], 2),
]

# fuzz_checkpoint.c's configuration, as the writer records it
CONFIG = {
    "clgrad.amsgrad": "0",
    "clgrad.acc_dtype": "bf16",
    "clgrad.param_copy_dtype": "none",
    "clgrad.normalize": "mean",
    "clgrad.nonfinite": "skip_update",
    "clgrad.loss_scale": "dynamic",
    "clgrad.loss_scale_growth": "2",
    "clgrad.loss_scale_backoff": "0.5",
    "clgrad.loss_scale_interval": "100",
    "clgrad.loss_scale_min": "1",
    "clgrad.loss_scale_max": "16777216",
}

# step block words (cl/layout.py) that the counters are cross-checked with,
# and the loss scale's growth tracker (checked against the interval, 100)
SB_T, SB_GROWTH, SB_SKIPPED, SB_SKIPPED_MICRO, SB_MICRO_COUNT = 5, 7, 8, 9, 16
PREFIX = b'{"__metadata__":{"clgrad.header_crc32":"0x'


def step_block(updates, skipped, skipped_micro, micro_count):
    words = [(0x01020304 * w + 0x3f800000) & 0xFFFFFFFF for w in range(32)]
    words[SB_T], words[SB_SKIPPED] = updates, skipped
    words[SB_SKIPPED_MICRO], words[SB_MICRO_COUNT] = skipped_micro, micro_count
    words[SB_GROWTH] = 0  # the filler would be 0x468e1c1c, past the interval
    return struct.pack("<32I", *words)


def seal(text):
    """Fills in the header CRC of a header text (bytes, padded)."""
    assert text.startswith(PREFIX)
    p = len(PREFIX)
    zeroed = text[:p] + b"00000000" + text[p + 8:]
    crc = zlib.crc32(struct.pack("<Q", len(text)) + zeroed)
    return text[:p] + b"%08x" % crc + text[p + 8:]


def checkpoint(order=None, user=None, micro=1, data_fill=1):
    updates, skipped, skipped_micro = 5, 2, 0
    blobs, header, meta = [], {}, {
        "clgrad.header_crc32": "0x00000000",
        "clgrad.format": "clgrad-checkpoint",
        "clgrad.version": "2",
        "clgrad.optimizer": "adamw",
        **CONFIG,
        "clgrad.micro": str(micro),
        "clgrad.weight_sum": "0x3f800000",
        "clgrad.cycles": str(updates + skipped),
        "clgrad.micro_total": "22",
        "clgrad.updates": str(updates),
        "clgrad.skipped_updates": str(skipped),
        "clgrad.skipped_micro_steps": str(skipped_micro),
    }
    entries = LAYOUT if order is None else [LAYOUT[i] for i in order]
    offset = 0
    for i, (key, dtype, shape, size) in enumerate(entries):
        count = 1
        for d in shape:
            count *= d
        if key == "clgrad.step_block":
            data = step_block(updates, skipped, skipped_micro, 0)
        else:
            data = bytes((data_fill * (i + 1) * 31 + j) & 0xFF for j in range(count * size))
        header[key] = {"dtype": dtype, "shape": shape,
                       "data_offsets": [offset, offset + len(data)]}
        meta["clgrad.crc32." + key] = "%08x" % zlib.crc32(data)
        blobs.append(data)
        offset += len(data)
    meta.update(user or {})
    header = {"__metadata__": meta, **header}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    text = seal(text)
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
    at = 8 + len(PREFIX) + 30  # a metadata byte after the CRC field
    write("checkpoint", "bad_header_crc", good[:at] + bytes([good[at] ^ 4]) + good[at + 1:])
    write("checkpoint", "json_only", struct.pack("<Q", 16) + b'{"a":[1,2]}     ')

    write("idx", "labels", idx(0x08, [10]))
    write("idx", "images", idx(0x08, [3, 4, 5]))
    write("idx", "empty", idx(0x08, [0, 28, 28]))
    write("idx", "four_dims", idx(0x08, [2, 2, 2, 2]))
    write("idx", "truncated", idx(0x08, [3, 4, 5])[:-7])
    write("idx", "float_type", idx(0x0D, [2]))

    # corpus/tuning: clgrad-tune's file for this repository's machine, and
    # near misses (a changed byte under the CRC, cut short, no CRC line)
    with open(os.path.join(HERE, "..", "bench", "results", "clblast-tuning-vm.tune"), "rb") as f:
        tune = f.read()
    write("tuning", "valid", tune)
    at = tune.index(b"budget ") + 7
    write("tuning", "bad_crc", tune[:at] + b"9" + tune[at + 1:])
    write("tuning", "truncated", tune[: len(tune) // 2])
    write("tuning", "no_crc", tune[: tune.rindex(b"crc32 ")])


if __name__ == "__main__":
    main()
