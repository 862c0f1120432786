#!/usr/bin/env python3
"""torch_gpt_train.py - clgrad-train --task gpt's run in PyTorch on the CPU.

The peer that bench/peer/gpt_compare.py runs interleaved with clgrad-train.

The same run as `clgrad-train --task gpt` with its defaults
(tools/train/tasks/gpt/gpt_options.c): the model of tests/gpt/torch_gpt.py
(2 layers, 4 heads, 64 wide, context 64; float32), the corpus read as
clgrad reads it (a file, or a directory's regular files that are no links
and no ".dat" indexes, joined in name order; the last 10% validate), the
training windows of T + 1 bytes at stride T in the trainer's order
(tests/gpt/clgrad_order.py), each batch of 8 as micro-batches of 4 whose
gradients accumulate (each micro-batch's summed per-sequence mean losses
divided by the batch: the batch's mean, as clgrad's mean mode with weight
rows), AdamW (lr 2e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on the
matrices only) under clgrad's schedule (docs/semantics.md: linear warmup
over min(20, updates - 1) updates, then cosine to 0), 2000 updates; then the
mean loss over every position of the validation windows, in nats per byte.

--data may also name llm.c token shards, as clgrad-train --task gpt --data
takes them (scripts/prepare-tokens.py's output: a shard, or a directory of
*.bin shards beside tokenizer.bin; a header of 256 int32, magic 20240520,
version 1, the count, then uint16 tokens): the shards whose name holds
"val" validate, the others train, each group joined in name order (with no
"val" shard the last 10% of the tokens validate); the windows are T + 1
tokens at stride T, and the vocabulary (wte's rows) is --vocab, else the
checkpoint's, else tokenizer.bin's beside the shards. The loss is then in
nats per token.

--profile splits the training time as clgrad-train --profile does, and adds
the classifier (bench/peer/torch_gpt_profile.py): JSON fields
profile_gemm_s, profile_attention_s, profile_other_s, profile_optimizer_s,
profile_classifier_s (= profile_head_s + profile_xent_s), profile_accumulate_s.

--init FILE starts from clgrad's own initial parameters (a checkpoint of
--save-initial; gpt_compare.py passes the one its --profile run wrote), and
every setting not given as a flag is the one stored in it (shape, updates,
batch, micro-batch, seed, lr, betas, eps, weight decay, warmup); without
it the parameters follow GPT-2's rule (gpt_init_params: N(0, 0.02), the
residual projections N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm weights
1) from torch's generator.

The training time, as clgrad-train counts it, excludes loading the data,
cutting the batches (clgrad_order) and the evaluation. BLAS and threads as
torch_mlp.py: the caller selects the BLAS with LD_LIBRARY_PATH and this
script reports the one mapped (OpenBLAS runs one thread per core, as PoCL
does for clgrad); --threads sets torch's intra-op threads (0: torch's own,
1 on the 2-core host: 2 beside OpenBLAS's 2 ran 8-40x slower in a trial on
the shared host, its threads spinning against OpenBLAS's).

Prints one JSON object on stdout. Usage:
    python3 bench/peer/torch_gpt_train.py [--data PATH] [--updates N] [--init FILE]
                                          [--threads T] [--profile]
"""

import argparse
import json
import math
import os
import stat
import sys
import struct
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "gpt"))
import clgrad_order  # noqa: E402
from torch_gpt import GPT, sequence_losses  # noqa: E402
from torch_gpt_profile import StepProfile  # noqa: E402
from torch_mlp import blas_in_use, lr_at  # noqa: E402
from torch_train_parity import read_safetensors  # noqa: E402

DEFAULT_CORPUS = "/usr/share/games/fortunes"
SHARD_MAGIC, SHARD_VERSION, SHARD_HEADER_INTS = 20240520, 1, 256
DECODE_MAGIC = 20240328  # tokenizer.bin: magic, version, vocabulary, ...
# The run's settings: a flag given, else the checkpoint's (--init; its
# train.<key>), else clgrad-train --task gpt's default.
SETTINGS = [  # (field, type, default, the checkpoint's key)
    ("updates", int, 2000, "config.steps"), ("batch", int, 8, "config.batch"),
    ("micro_batch", int, 4, "config.micro-batch"), ("seed", int, 42, "config.seed"),
    ("lr", float, 2e-3, "config.lr"), ("beta1", float, 0.9, "config.beta1"),
    ("beta2", float, 0.999, "config.beta2"), ("eps", float, 1e-8, "config.eps"),
    ("weight_decay", float, 1e-2, "config.weight-decay"), ("warmup", int, 20, "config.warmup"),
    ("layers", int, 2, "gpt.layers"), ("heads", int, 4, "gpt.heads"),
    ("width", int, 64, "gpt.width"), ("context", int, 64, "gpt.context"),
]


def load_corpus(path):
    """The corpus as clgrad-train's gpt_corpus_load reads it."""
    if not os.path.isdir(path):
        with open(path, "rb") as f:
            return f.read()
    names = sorted((n for n in os.listdir(path) if not n.startswith(".") and
                    not n.endswith(".dat") and
                    stat.S_ISREG(os.lstat(os.path.join(path, n)).st_mode)),
                   key=os.fsencode)  # strcmp order
    parts = []
    for n in names:
        with open(os.path.join(path, n), "rb") as f:
            parts.append(f.read())
    return b"".join(parts)


def is_shard(path):
    with open(path, "rb") as f:
        head = f.read(4)
    return len(head) == 4 and struct.unpack("<i", head)[0] == SHARD_MAGIC


def shard_files(path):
    """The token shards at path (a shard, or a directory's *.bin shards but
    tokenizer.bin, in name order, as clgrad-train's gpt_shards_list), or []
    when path is text."""
    if not os.path.isdir(path):
        return [path] if is_shard(path) else []
    names = sorted((n for n in os.listdir(path) if n.endswith(".bin") and n != "tokenizer.bin"
                    and not n.startswith(".")), key=os.fsencode)
    files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
    return files if any(is_shard(f) for f in files) else []


def read_shard(path):
    """A shard's tokens as a long tensor, its header checked."""
    with open(path, "rb") as f:
        raw = f.read()
    magic, version, count = struct.unpack_from("<3i", raw)
    body = 4 * SHARD_HEADER_INTS
    if (magic, version) != (SHARD_MAGIC, SHARD_VERSION) or len(raw) != body + 2 * count:
        sys.exit("torch_gpt_train.py: %s is not a token shard of %d tokens" % (path, count))
    return torch.frombuffer(bytearray(raw[body:]), dtype=torch.int16).long() & 0xFFFF


def load_tokens(files, by_name):
    """(train, val) token tensors of the shards: with by_name (a directory's
    shards) those whose name holds "val" validate; without any, the last
    10% of the tokens."""
    val = [f for f in files if "val" in os.path.basename(f)] if by_name else []
    train = torch.cat([read_shard(f) for f in files if f not in val])
    if val:
        return train, torch.cat([read_shard(f) for f in val])
    n_train = len(train) - len(train) // 10
    return train[:n_train], train[n_train:]


def tokenizer_vocab(files):
    """The vocabulary of tokenizer.bin beside the first shard, or None."""
    path = os.path.join(os.path.dirname(files[0]), "tokenizer.bin")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        magic, _version, vocab = struct.unpack("<3i", f.read(12))
    return vocab if magic == DECODE_MAGIC else None


def windows(tokens, T):
    """The (n - 1) // T windows of T + 1 tokens (bytes or token ids, a long
    tensor) at stride T (gpt_data.h)."""
    count = (len(tokens) - 1) // T
    return tokens[:count * T + 1].unfold(0, T + 1, T)[:count].contiguous()


def byte_tensor(data):
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def init_gpt2(model, layers, seed):
    """GPT-2's initialization rule (gpt_init_params), from torch's generator."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or \
                    name == "ln_f.weight":
                p.fill_(1.0)
            else:
                p.zero_()


def resolve_settings(meta, args):
    """Each setting not given: the checkpoint's, else the default. The
    checkpoint's schedule must be cosine (the one this script runs)."""
    if meta.get("train.config.schedule", "cosine") != "cosine":
        sys.exit("torch_gpt_train.py: the checkpoint's schedule is %s; this script runs cosine"
                 % meta["train.config.schedule"])
    for field, kind, default, key in SETTINGS:
        if getattr(args, field) is None:
            try:
                setattr(args, field, kind(meta.get("train." + key, default)))
            except ValueError:  # e.g. steps "unused (--epochs)"
                sys.exit("torch_gpt_train.py: the checkpoint's %s is %r; give --%s" % (
                    key, meta["train." + key], field.replace("_", "-")))


def evaluate(model, val, chunk=256):
    """Mean cross-entropy over every position of the validation windows."""
    total = 0.0
    with torch.no_grad():
        for off in range(0, val.shape[0], chunk):
            total += sequence_losses(model, val[off:off + chunk]).double().sum().item()
    return total / val.shape[0]  # every window has T positions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_CORPUS)
    ap.add_argument("--init", default=None, help="clgrad-train --save-initial's checkpoint")
    for field, kind, default, _ in SETTINGS:
        ap.add_argument("--" + field.replace("_", "-"), type=kind, default=None,
                        help="default: the checkpoint's, else %g" % default)
    ap.add_argument("--vocab", type=int, default=None,
                    help="token shards' vocabulary (default: the checkpoint's, else tokenizer.bin's)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's own)")
    ap.add_argument("--profile", action="store_true",
                    help="split the training time (torch_gpt_profile.py)")
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    init, meta = read_safetensors(args.init) if args.init else (None, {})
    resolve_settings(meta, args)
    shards = shard_files(args.data)
    if shards:
        train, val = load_tokens(shards, os.path.isdir(args.data))
        vocab = args.vocab or int(meta.get("train.gpt.vocab", 0)) or tokenizer_vocab(shards)
        if not vocab:
            sys.exit("torch_gpt_train.py: %s has no tokenizer.bin; give --vocab" % args.data)
    else:
        data = byte_tensor(load_corpus(args.data))
        n_train = len(data) - len(data) // 10
        train, val, vocab = data[:n_train], data[n_train:], 256
    model = GPT(args.layers, args.heads, args.width, args.context)
    if vocab != model.wte.shape[0]:  # torch_gpt.GPT's wte has the 256 bytes' rows
        model.wte = nn.Parameter(torch.zeros(vocab, args.width))
    if init is not None:
        model.load_state_dict({n: init[n].float() for n, _ in model.named_parameters()})
    else:
        init_gpt2(model, args.layers, args.seed)
    train, val = windows(train, args.context), windows(val, args.context)
    if "train.n_train" in meta and int(meta["train.n_train"]) != train.shape[0]:
        sys.exit("torch_gpt_train.py: %s has %d training windows, the checkpoint's run %s" % (
            args.data, train.shape[0], meta["train.n_train"]))
    order = clgrad_order.batches(args.seed, train.shape[0], args.batch, args.updates)
    warmup = min(args.warmup, args.updates - 1)  # run_warmup's cap for a decaying schedule

    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    prof = StepProfile(model) if args.profile else None

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    t0 = time.perf_counter()
    loss_sum = torch.zeros((), dtype=torch.float64)
    for update, batch in enumerate(order):
        for g in opt.param_groups:
            g["lr"] = lr_at(update, args.lr, warmup, args.updates)
        for micro in clgrad_order.micro_batches(batch, args.micro_batch):
            if prof:
                prof.forward_begin()
            seq = sequence_losses(model, train[micro])
            loss = seq.sum() / len(batch)
            if prof:
                prof.backward(loss)
            else:
                loss.backward()
            loss_sum += seq.detach().sum()
        if prof:
            prof.timed("optimizer", step)
        else:
            step()
    train_seconds = time.perf_counter() - t0
    profile = prof.fields() if prof else {}
    t1 = time.perf_counter()
    val_loss = evaluate(model, val)
    eval_seconds = time.perf_counter() - t1

    sequences = sum(len(b) for b in order)
    tokens = sequences * args.context
    print(json.dumps({
        "peer": "pytorch", "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "blas": blas_in_use(),
        "init": "clgrad checkpoint %s" % args.init if args.init else "GPT-2 rule, torch seed",
        "data": "%d token shard(s)" % len(shards) if shards else "text", "vocab": vocab,
        "layers": args.layers, "heads": args.heads, "width": args.width,
        "context": args.context, "params": sum(p.numel() for p in model.parameters()),
        "batch": args.batch, "micro_batch": args.micro_batch, "lr": args.lr,
        "warmup": warmup, "weight_decay": args.weight_decay, "updates": len(order),
        "samples": sequences, "train_windows": train.shape[0], "val_windows": val.shape[0],
        "train_loss": loss_sum.item() / sequences, "val_loss": val_loss,
        "val_bits_per_byte": None if shards else val_loss / math.log(2),
        "train_seconds": train_seconds, "seconds_per_update": train_seconds / len(order),
        "tokens_per_s": tokens / train_seconds, "eval_seconds": eval_seconds,
        "total_seconds": time.perf_counter() - t_start, **profile,
    }))


if __name__ == "__main__":
    main()
