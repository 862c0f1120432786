#!/usr/bin/env python3
"""The GPT task's model (tools/train/tasks/gpt/gpt_model.h) in PyTorch, and
the meson test 'gpt_grads' that checks clgrad-train's model against it.

The module mirrors clgrad's tensors by name and layout (state_dict keys are
gpt_tensor's names: wte, wpe, h.<l>.ln_1.weight, ..., ln_f.bias; linear
weights [out x in]): token and position embeddings, pre-LayerNorm blocks
of causal multi-head self-attention and a GELU (tanh) MLP of 4C, ln_f and
the head tied to wte. Other scripts import GPT and sequence_losses.

As a program: torch_gpt.py GPT_GRADS_EXE runs tests/gpt_grads.c's program,
which writes the params, tokens, mean loss and accumulator (path B, beta 0,
dscale 1: the gradient of the sum over sequences of each sequence's mean
loss) of one micro-step of a tiny model, and compares them with this model
in float64: the loss within 1e-5 relative, each tensor's gradient within
1e-4 relative L2 error. Exit 0 when both hold, 1 when not, 77 (skip) only
when the program found no OpenCL platform."""

import math
import os
import struct
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256
LOSS_RTOL = 1e-5
GRAD_RTOL = 1e-4


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        # q, k, v side by side in each row, heads in order within each
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (z.view(B, T, self.heads, hs).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width, eps=1e-5)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width, eps=1e-5)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Parameters in gpt_tensor's order (named_parameters gives it)."""

    def __init__(self, layers, heads, width, context):
        super().__init__()
        self.context = context
        self.wte = nn.Parameter(torch.zeros(VOCAB, width))
        self.wpe = nn.Parameter(torch.zeros(context, width))
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)

    def forward(self, idx):
        """idx [B x T] byte values (long), T <= context: logits [B x T x V]."""
        x = self.wte[idx] + self.wpe[: idx.shape[1]]
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.t()


def sequence_losses(model, windows):
    """windows [B x (T + 1)] bytes: each sequence's mean cross-entropy of
    predicting byte t + 1 from bytes 0..t, as a [B] tensor."""
    logits = model(windows[:, :-1])
    B, T, V = logits.shape
    ce = F.cross_entropy(logits.reshape(B * T, V), windows[:, 1:].reshape(B * T),
                         reduction="none")
    return ce.view(B, T).mean(dim=1)


def read_grads_file(path):
    """tests/gpt_grads.c's file: (shape dict, mean loss, windows [B x T+1],
    {name: (param, grad)} in model order)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"GPTGRAD1":
        raise ValueError(f"{path}: not a gpt_grads file")
    L, NH, C, T, B, n = struct.unpack_from("<6I", data, 8)
    (loss,) = struct.unpack_from("<d", data, 32)
    pos = 40
    windows = torch.tensor(list(data[pos:pos + B * (T + 1)]), dtype=torch.long).view(B, T + 1)
    pos += B * (T + 1)
    tensors = {}
    for _ in range(n):
        (length,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + length].decode()
        pos += 4 + length
        ndim, d0, d1 = struct.unpack_from("<3I", data, pos)
        pos += 12
        shape = (d0, d1) if ndim == 2 else (d0,)
        count = d0 * (d1 if ndim == 2 else 1)
        vals = []
        for _ in range(2):
            vals.append(torch.tensor(struct.unpack_from(f"<{count}f", data, pos),
                                     dtype=torch.float64).view(shape))
            pos += 4 * count
        tensors[name] = tuple(vals)
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} bytes past the end")
    shape = {"layers": L, "heads": NH, "width": C, "context": T, "batch": B}
    return shape, loss, windows, tensors


def check(exe):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt_grads.bin")
        rc = subprocess.run([exe, path]).returncode
        if rc != 0:
            print(f"{exe} exited with {rc}")
            return 77 if rc == 77 else 1
        shape, loss, windows, tensors = read_grads_file(path)
    model = GPT(shape["layers"], shape["heads"], shape["width"], shape["context"]).double()
    names = [name for name, _ in model.named_parameters()]
    if names != list(tensors):
        print(f"tensor names differ: torch {names}, clgrad {list(tensors)}")
        return 1
    model.load_state_dict({name: p for name, (p, _) in tensors.items()})
    losses = sequence_losses(model, windows)
    losses.sum().backward()
    ref_loss = losses.mean().item()  # equal T per sequence: the mean over positions
    ok = True
    loss_err = abs(loss - ref_loss) / abs(ref_loss)
    print(f"loss: clgrad {loss:.9g}, torch {ref_loss:.9g}, rel err {loss_err:.3g}"
          f" (limit {LOSS_RTOL:g})")
    ok &= loss_err <= LOSS_RTOL
    worst, worst_name = -1.0, ""
    for name, p in model.named_parameters():
        got, ref = tensors[name][1], p.grad
        err = (torch.linalg.norm(got - ref) / torch.linalg.norm(ref)).item()
        if not err <= GRAD_RTOL:
            print(f"  {name}: gradient rel L2 error {err:.3g}")
            ok = False
        if not err <= worst:
            worst, worst_name = err, name
    print(f"worst gradient: {worst_name}, rel L2 error {worst:.3g} (limit {GRAD_RTOL:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} GPT_GRADS_EXE")
    sys.exit(check(sys.argv[1]))
