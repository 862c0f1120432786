#!/usr/bin/env python3
"""torch_mlp.py - clgrad-train's default job in PyTorch on the CPU: the peer
that bench/peer/compare.py runs interleaved with clgrad-train.

Same job as `clgrad-train` with its defaults (tools/train/options.c):
784-512-256-10 MLP with ReLU, nn.Linear's default init (uniform +-1/sqrt(fan_in),
as clgrad-train's), pixels / 255, softmax cross-entropy, AdamW lr 1e-3,
betas (0.9, 0.999), eps 1e-8, weight decay 1e-2 on the weights and none on the
biases, linear warmup over 50 updates then cosine to 0 (docs/semantics.md),
3 epochs of effective batches of 128 drawn from one shuffle per epoch (the
last batch of an epoch holds the rest: 96 samples), each batch as
micro-batches of 32 whose gradients accumulate before one update (the mean
over the batch's samples, as clgrad's mean mode with weights = rows).
Training time, as clgrad-train counts it, excludes the evaluation after each
epoch and the data loading.

The BLAS: Debian's torch links the generic libblas.so.3, whichever the
alternatives system points to (the reference BLAS unless an optimized one is
installed). compare.py selects one explicitly with LD_LIBRARY_PATH before
this process starts; this script reports the library actually mapped into it
(and OpenBLAS's own configuration string when it is OpenBLAS) so that the
result says which BLAS ran.

Prints one JSON object on stdout. Usage:
    python3 bench/peer/torch_mlp.py [--epochs 3] [--threads 2] [--limit-train N]
"""

import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import torch

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    t = torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8)
    return t.reshape(dims)


def load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    return images.reshape(images.shape[0], -1).float().div_(255.0), labels.long()


def blas_in_use():
    """The BLAS library mapped into this process, and OpenBLAS's config."""
    path = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.basename(fields[5]).startswith(
                    ("libblas.so", "libopenblas", "libmkl_rt", "libblis")):
                path = fields[5]
                break
    info = {"library": path, "resolved": os.path.realpath(path) if path else None}
    config = None
    if path:
        import ctypes
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_get_config"):
            lib.openblas_get_config.restype = ctypes.c_char_p
            config = lib.openblas_get_config().decode()
            lib.openblas_get_num_threads.restype = ctypes.c_int
            info["threads"] = lib.openblas_get_num_threads()
    info["openblas_config"] = config
    if config:
        info["name"] = "OpenBLAS"
    elif path and "/blas/" in (info["resolved"] or ""):
        info["name"] = "reference BLAS (netlib)"
    else:
        info["name"] = "unknown"
    return info


def lr_at(t, lr, warmup, total):
    """clgrad's schedule (docs/semantics.md): warmup then cosine to 0."""
    if t < warmup:
        return lr * (t + 1) / warmup
    p = min(max((t - warmup) / max(total - warmup, 1), 0.0), 1.0)
    return lr * 0.5 * (1.0 + math.cos(math.pi * p))


def evaluate(model, images, labels, chunk=1000):
    correct, loss = 0, 0.0
    with torch.no_grad():
        for off in range(0, images.shape[0], chunk):
            logits = model(images[off:off + chunk])
            y = labels[off:off + chunk]
            loss += torch.nn.functional.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
    return correct / images.shape[0], loss / images.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA_DIR)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--micro-batch", type=int, default=32)
    ap.add_argument("--hidden", default="512,256")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-2)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's own)")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.perf_counter()
    x_train, y_train = load(args.data, "train")
    x_test, y_test = load(args.data, "t10k")
    if args.limit_train:
        x_train, y_train = x_train[:args.limit_train], y_train[:args.limit_train]
    if args.limit_test:
        x_test, y_test = x_test[:args.limit_test], y_test[:args.limit_test]

    widths = [x_train.shape[1]] + [int(w) for w in args.hidden.split(",")] + [10]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    opt = torch.optim.AdamW([{"params": weights, "weight_decay": args.weight_decay},
                             {"params": biases, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.999), eps=1e-8)

    n = x_train.shape[0]
    per_epoch = (n + args.batch - 1) // args.batch
    total = per_epoch * args.epochs
    gen = torch.Generator().manual_seed(args.seed)
    train_seconds, samples, update = 0.0, 0, 0
    epochs = []
    for epoch in range(args.epochs):
        perm = torch.randperm(n, generator=gen)
        t0 = time.perf_counter()
        loss_sum, correct = 0.0, 0
        for b in range(per_epoch):
            idx = perm[b * args.batch:(b + 1) * args.batch]
            for g in opt.param_groups:
                g["lr"] = lr_at(update, args.lr, args.warmup, total)
            for off in range(0, idx.shape[0], args.micro_batch):
                mi = idx[off:off + args.micro_batch]
                x, y = x_train[mi], y_train[mi]
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
                (loss / idx.shape[0]).backward()
                loss_sum += loss.detach()
                correct += (logits.detach().argmax(1) == y).sum()
            opt.step()
            opt.zero_grad(set_to_none=True)
            update += 1
            samples += idx.shape[0]
        loss_sum, correct = float(loss_sum), int(correct)
        secs = time.perf_counter() - t0
        train_seconds += secs
        acc, test_loss = evaluate(model, x_test, y_test)
        epochs.append({"epoch": epoch + 1, "train_loss": loss_sum / n, "train_accuracy": correct / n,
                       "test_accuracy": acc, "test_loss": test_loss, "seconds": secs})
        print("epoch %d/%d: loss %.4f  test acc %.4f  %.1f s  %.0f samples/s"
              % (epoch + 1, args.epochs, loss_sum / n, acc, secs, n / secs), file=sys.stderr)

    print(json.dumps({
        "peer": "pytorch",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "blas": blas_in_use(),
        "widths": widths, "batch": args.batch, "micro_batch": args.micro_batch,
        "epochs": args.epochs, "updates": update, "samples": samples,
        "test_accuracy": epochs[-1]["test_accuracy"], "test_loss": epochs[-1]["test_loss"],
        "train_seconds": train_seconds, "samples_per_s": samples / train_seconds,
        "total_seconds": time.perf_counter() - t_start, "per_epoch": epochs,
    }))


if __name__ == "__main__":
    main()
