#!/usr/bin/env python3
"""clgrad's GPT task against Hugging Face transformers' GPT-2, both ways
(scripts/check-hf-gpt2.sh runs it in a venv with transformers from PyPI).

A GPT2LMHeadModel with random weights (no hub: vocab 256, 2 layers, 2
heads, 64 wide, 64 positions; initializer_range 0.2, so that its greedy
text is not one byte over and over, and its LayerNorms and biases made
non-trivial) is saved with save_pretrained, then:
  a. logits: tests/gpt_hf_logits.c reads the directory (gpt_hf_load) and
     runs the model on the device; its logits of 3 sequences equal
     transformers' within 1e-4 relative (max |difference| / max |logit|);
  b. round trip: the weights gpt_hf_load read, written back by gpt_hf_export
     from the device, are the tensors transformers saved, bit for bit
     (safetensors' own reader), and load back in transformers equal;
  c. training: clgrad-train --init-from DIR trains a few updates and
     --export-hf writes the result, which GPT2LMHeadModel.from_pretrained
     loads without a warning of missing or unexpected weights (its logging
     captured), and whose greedy 32-byte continuation of a prompt in
     transformers is the one `--sample 32 --temperature 0` printed (at
     least 8 distinct bytes, and weights that moved);
  d. fine-tuning: the losses of 20 AdamW updates of 3 micro-batches of
     clgrad-train --init-from equal those of the same fine-tuning of the
     transformers model in PyTorch (float64; torch_train_parity.py's
     batches, clgrad_order, and AdamW settings, read back from the run's
     --save-initial checkpoint) within 1e-4 relative, the first within 1e-5.
With --vocab 50257 the same four with GPT-2's vocabulary, on token shards
(llm.c's format, random tokens of a skewed distribution, written here):
logits of uint16 token sequences, the round trip, training and greedy
continuations compared as token ids (--prompt-tokens; no decode table: the
trainer prints ids), and the fine-tuning on the training shard's windows.
--gpt2-small-shape: a and b alone at 12 layers, 12 heads, 768 wide, 1024
positions (with --vocab 50257: GPT-2 small itself).
--save-random DIR writes such a random model (2 layers, --vocab V) to DIR
and does nothing else: scripts/check-hf-gpt2.sh's run of the README's
fine-tuning flow starts from it.
Usage: hf_gpt2_check.py --train CLGRAD_TRAIN --logits GPT_HF_LOGITS --data TEXT
                        [--vocab V] [--gpt2-small-shape]
       hf_gpt2_check.py --save-random DIR [--vocab V]
Exit 0 when all hold, 1 when not."""

import argparse
import io
import logging
import os
import subprocess
import sys
import tempfile

import csv

import numpy as np
import torch
import torch.nn.functional as F

import transformers
from safetensors.numpy import load_file
from transformers import GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clgrad_order  # noqa: E402
from torch_train_parity import read_safetensors, split_windows  # noqa: E402

LOGIT_RTOL = 1e-4
FIRST_RTOL = 1e-5
LOSS_RTOL = 1e-4
RUN = {"batch": 12, "micro": 4, "updates": 20, "seed": 7, "lr": 1e-3}
SHAPE = dict(n_layer=2, n_head=2, n_embd=64, n_positions=64, vocab_size=256)
PROMPT = "The "
SAMPLE = 32

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def random_model(seed, shape=SHAPE, init_range=0.2):
    torch.manual_seed(seed)
    cfg = GPT2Config(**shape, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     initializer_range=init_range)
    model = GPT2LMHeadModel(cfg)
    with torch.no_grad():  # GPT-2's init leaves LayerNorms at 1, 0 and biases at 0
        for name, p in model.named_parameters():
            if "ln_" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


class Captured:
    """transformers' log records while a block runs."""

    def __enter__(self):
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        transformers.logging.set_verbosity_warning()
        transformers.logging.get_logger().addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        transformers.logging.get_logger().removeHandler(self.handler)

    def text(self):
        return self.stream.getvalue()


def weight_warnings(log):
    bad = ("not used", "newly initialized", "missing", "unexpected", "not initialized")
    return [line for line in log.splitlines() if any(b in line.lower() for b in bad)]


def token_seqs(vocab, T, n):
    """n sequences of T token ids below vocab: bytes of this file and
    random ones for the bytes; for a vocabulary, skewed ids with 0 and
    vocab - 1 among them (uint16, as the shards and gpt_hf_logits take)."""
    rng = np.random.default_rng(3)
    if vocab <= 256:
        text = open(__file__, "rb").read()
        return [np.frombuffer(text[:T], np.uint8), rng.integers(0, 256, T).astype(np.uint8),
                np.frombuffer(text[1000:1000 + T], np.uint8)][:n]
    seqs = [skewed_tokens(rng, vocab, T) for _ in range(n)]
    seqs[0][0], seqs[0][-1] = 0, vocab - 1
    return seqs


def skewed_tokens(rng, vocab, n):
    """n ids: a Zipf-like draw (most from a few hundred, some anywhere)."""
    ids = np.minimum(rng.zipf(1.3, n) - 1, vocab - 1)
    spread = rng.integers(0, vocab, n)
    return np.where(rng.random(n) < 0.2, spread, ids).astype(np.uint16)


def check_logits(exe, model_dir, model, tmp, T, n_seqs=3, vocab=256):
    seqs = token_seqs(vocab, T, n_seqs)
    tokens = os.path.join(tmp, "tokens.bin")
    np.concatenate(seqs).astype("<u2" if vocab > 256 else np.uint8).tofile(tokens)
    out = os.path.join(tmp, "logits.bin")
    back = os.path.join(tmp, "roundtrip")
    subprocess.run([exe, model_dir, tokens, out, back], check=True)
    got = np.fromfile(out, np.float32).reshape(len(seqs), T, vocab)
    with torch.no_grad():
        want = model(torch.tensor(np.stack(seqs).astype(np.int64))).logits.numpy()
    err = float(np.abs(got - want).max() / np.abs(want).max())
    check(err <= LOGIT_RTOL, f"logits of {len(seqs)} sequences of {T}: max |diff| / max |logit| "
          f"= {err:.2e} (<= {LOGIT_RTOL:g}); max |logit| {np.abs(want).max():.3g}")
    return back


def check_round_trip(model_dir, back):
    orig = load_file(os.path.join(model_dir, "model.safetensors"))
    again = load_file(os.path.join(back, "model.safetensors"))
    check(sorted(orig) == sorted(again),
          f"round trip: the same {len(orig)} keys as save_pretrained's "
          f"(extra {sorted(set(again) - set(orig))}, missing {sorted(set(orig) - set(again))})")
    same = [k for k in orig if k in again and orig[k].dtype == again[k].dtype
            and orig[k].shape == again[k].shape and orig[k].tobytes() == again[k].tobytes()]
    check(len(same) == len(orig), f"round trip: {len(same)} of {len(orig)} tensors bit for bit")
    with Captured() as log:
        m = GPT2LMHeadModel.from_pretrained(back)
    check(not weight_warnings(log.text()), "round trip: from_pretrained warns of no weight: "
          + repr(weight_warnings(log.text())))


def write_shards(tmp, vocab, T):
    """Token shards of llm.c's format (a header of 256 int32: magic
    20240520, version 1, the count; then uint16 ids) in a new directory:
    a training shard of 40 windows and a "val" one of 8; the training
    tokens (for the fine-tuning's windows)."""
    rng = np.random.default_rng(5)
    d = os.path.join(tmp, "shards")
    os.makedirs(d)
    parts = {"train": skewed_tokens(rng, vocab, 40 * T + 1),
             "val": skewed_tokens(rng, vocab, 8 * T + 1)}
    for name, tok in parts.items():
        head = np.zeros(256, "<i4")
        head[:3] = (20240520, 1, len(tok))
        with open(os.path.join(d, "random_%s_000000.bin" % name), "wb") as f:
            f.write(head.tobytes() + tok.astype("<u2").tobytes())
    return d, parts["train"]


PROMPT_TOKENS = [464, 3290, 318, 50256]


def sampled_part(stdout, vocab):
    """What --sample printed after its header line: the bytes of a byte
    model, the comma-separated ids of a token model without a decode
    table."""
    head = stdout.index(b"sample (")
    body = stdout[stdout.index(b":\n", head) + 2:]
    if vocab <= 256:
        return body
    return [int(x) for x in body.split(b"\n")[0].split(b",")]


def check_training(train, model_dir, data, tmp, vocab=256):
    out = os.path.join(tmp, "trained")
    prompt = (["--prompt", PROMPT] if vocab <= 256 else
              ["--vocab", str(vocab), "--prompt-tokens", ",".join(map(str, PROMPT_TOKENS))])
    cmd = [train, "--task", "gpt", "--init-from", model_dir, "--data", data, "--steps", "10",
           "--batch", "4", "--micro-batch", "2", "--seed", "5", "--lr", "1e-4", "--export-hf", out,
           "--sample", str(SAMPLE), "--temperature", "0"] + prompt
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace"))
    check(r.returncode == 0, "clgrad-train --init-from ... --export-hf ... --sample ran")
    if r.returncode != 0:
        return
    body = sampled_part(r.stdout, vocab)
    start = PROMPT.encode() if vocab <= 256 else PROMPT_TOKENS
    sampled = body[len(start):len(start) + SAMPLE]
    check(body[:len(start)] == start and len(sampled) == SAMPLE
          and len(set(sampled)) >= 8, "the trainer printed the prompt and 32 tokens, "
          f"{len(set(sampled))} distinct")
    before = load_file(os.path.join(model_dir, "model.safetensors"))
    after = load_file(os.path.join(out, "model.safetensors"))
    moved = [k for k in before if before[k].tobytes() != after[k].tobytes()]
    check(len(moved) == len(before), f"training moved {len(moved)} of {len(before)} tensors")
    with Captured() as log:
        m = GPT2LMHeadModel.from_pretrained(out).eval()
    warn = weight_warnings(log.text())
    check(not warn, "the exported model loads with no missing/unexpected-weights warning" +
          (": " + repr(warn) if warn else ""))
    ids = torch.tensor([list(start)], dtype=torch.long)
    with torch.no_grad():
        gen = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=SAMPLE,
                         do_sample=False, pad_token_id=0)
    theirs = gen[0, ids.shape[1]:].tolist()
    theirs = bytes(theirs) if vocab <= 256 else theirs
    check(theirs == sampled, f"greedy {SAMPLE}-token continuation of {start!r}: transformers "
          f"{theirs!r}, clgrad-train {sampled!r}")


def run_clgrad(train, model_dir, data, tmp, vocab):
    init, m_csv = os.path.join(tmp, "init.st"), os.path.join(tmp, "m.csv")
    cmd = [train, "--task", "gpt", "--init-from", model_dir, "--data", data, "--quiet",
           *(["--vocab", str(vocab)] if vocab > 256 else []),
           "--batch", str(RUN["batch"]), "--micro-batch", str(RUN["micro"]),
           "--steps", str(RUN["updates"]), "--seed", str(RUN["seed"]), "--lr", str(RUN["lr"]),
           "--warmup", "0", "--schedule", "constant", "--optimizer", "adamw",
           "--save-initial", init, "--metrics", m_csv]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-3000:])
        return None, None
    with open(m_csv) as f:
        losses = [float(row["loss"]) for row in csv.DictReader(f)]
    return losses, read_safetensors(init)[1]


def torch_fine_tune(model_dir, meta, windows):
    """The same updates of the transformers model, in float64."""
    model = GPT2LMHeadModel.from_pretrained(model_dir).double().train()
    cfg = lambda key: float(meta["train.config." + key])  # noqa: E731
    params = list(model.parameters())  # lm_head is wte: listed once
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() == 2], "weight_decay": cfg("weight-decay")},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=cfg("lr"), betas=(cfg("beta1"), cfg("beta2")), eps=cfg("eps"))
    losses = []
    for batch in clgrad_order.batches(RUN["seed"], len(windows), RUN["batch"], RUN["updates"]):
        opt.zero_grad()
        total = 0.0
        for micro in clgrad_order.micro_batches(batch, RUN["micro"]):
            w = windows[micro]
            logits = model(w[:, :-1]).logits
            seq = F.cross_entropy(logits.transpose(1, 2), w[:, 1:], reduction="none").mean(1)
            (seq.sum() / len(batch)).backward()
            total += seq.sum().item()
        losses.append(total / len(batch))
        opt.step()
    return losses


def check_fine_tuning(train, model_dir, data, tmp, vocab=256, windows=None):
    got, meta = run_clgrad(train, model_dir, data, tmp, vocab)
    check(got is not None and len(got) == RUN["updates"],
          f"clgrad-train --init-from: {RUN['updates']} updates with --metrics")
    if got is None or len(got) != RUN["updates"]:
        return
    if windows is None:
        windows = split_windows(data, SHAPE["n_positions"])
    ref = torch_fine_tune(model_dir, meta, windows)
    errs = [abs(g - r) / abs(r) for g, r in zip(got, ref)]
    for i, (g, r, e) in enumerate(zip(got, ref, errs)):
        print(f"      update {i + 1:2d}: loss clgrad {g:.6f}, transformers {r:.6f}, rel {e:.2e}")
    check(errs[0] <= FIRST_RTOL and max(errs) <= LOSS_RTOL,
          f"fine-tuning: {RUN['updates']} AdamW updates of {RUN['batch'] // RUN['micro']} "
          f"micro-batches, worst loss rel err {max(errs):.2e} (first {errs[0]:.2e}; limits "
          f"{LOSS_RTOL:g}, {FIRST_RTOL:g}); loss {ref[0]:.4f} -> {ref[-1]:.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", help="clgrad-train")
    ap.add_argument("--logits", help="the gpt_hf_logits test program")
    ap.add_argument("--data", help="a text file to fine-tune on")
    ap.add_argument("--save-random", metavar="DIR", help="only save a random model to DIR")
    ap.add_argument("--gpt2-small-shape", action="store_true",
                    help="only a and b, at GPT-2 small's shape (12 layers, 12 heads, 768 "
                    "wide, 1024 positions) with GPT-2's init, 2 sequences")
    ap.add_argument("--vocab", type=int, default=256,
                    help="the vocabulary: 256 (bytes of --data) or more (token shards)")
    a = ap.parse_args()
    V = a.vocab
    if a.save_random:
        random_model(11, dict(SHAPE, vocab_size=V)).save_pretrained(a.save_random,
                                                                    safe_serialization=True)
        return 0
    if not (a.train and a.logits and a.data):
        ap.error("--train, --logits and --data are needed")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, vocab {V}")
    if a.gpt2_small_shape:
        with tempfile.TemporaryDirectory() as tmp:
            shape = dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=V)
            model_dir = os.path.join(tmp, "random-gpt2-small")
            model = random_model(13, shape, init_range=0.02)
            model.save_pretrained(model_dir, safe_serialization=True)
            back = check_logits(a.logits, model_dir, model, tmp, 1024, n_seqs=2, vocab=V)
            check_round_trip(model_dir, back)
        return 1 if failures else 0
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "random-gpt2")
        model = random_model(11, dict(SHAPE, vocab_size=V))
        model.save_pretrained(model_dir, safe_serialization=True)
        back = check_logits(a.logits, model_dir, model, tmp, SHAPE["n_positions"], vocab=V)
        check_round_trip(model_dir, back)
        data, windows = a.data, None
        if V > 256:
            T = SHAPE["n_positions"]
            data, train_tokens = write_shards(tmp, V, T)
            tok = torch.tensor(train_tokens.astype(np.int64))
            windows = torch.stack([tok[i * T:i * T + T + 1] for i in range((len(tok) - 1) // T)])
        check_training(a.train, model_dir, data, tmp, V)
        check_fine_tuning(a.train, model_dir, data, tmp, V, windows)
    if failures:
        print(f"hf_gpt2_check: {len(failures)} failed", file=sys.stderr)
        return 1
    print("hf_gpt2_check: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
