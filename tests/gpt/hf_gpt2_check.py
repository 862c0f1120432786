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
Usage: hf_gpt2_check.py --train CLGRAD_TRAIN --logits GPT_HF_LOGITS --data TEXT
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


def check_logits(exe, model_dir, model, tmp, T, n_seqs=3):
    rng = np.random.default_rng(3)
    text = open(__file__, "rb").read()
    seqs = [np.frombuffer(text[:T], np.uint8), rng.integers(0, 256, T).astype(np.uint8),
            np.frombuffer(text[1000:1000 + T], np.uint8)][:n_seqs]
    tokens = os.path.join(tmp, "tokens.bin")
    np.concatenate(seqs).tofile(tokens)
    out = os.path.join(tmp, "logits.bin")
    back = os.path.join(tmp, "roundtrip")
    subprocess.run([exe, model_dir, tokens, out, back], check=True)
    got = np.fromfile(out, np.float32).reshape(len(seqs), T, 256)
    with torch.no_grad():
        want = model(torch.tensor(np.stack(seqs), dtype=torch.long)).logits.numpy()
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


def check_training(train, model_dir, data, tmp):
    out = os.path.join(tmp, "trained")
    cmd = [train, "--task", "gpt", "--init-from", model_dir, "--data", data, "--steps", "10",
           "--batch", "4", "--micro-batch", "2", "--seed", "5", "--lr", "1e-4", "--export-hf", out,
           "--sample", str(SAMPLE), "--temperature", "0", "--prompt", PROMPT]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace"))
    check(r.returncode == 0, "clgrad-train --init-from ... --export-hf ... --sample ran")
    if r.returncode != 0:
        return
    stdout = r.stdout
    head = stdout.index(b"sample (")
    body = stdout[stdout.index(b":\n", head) + 2:]
    sampled = body[len(PROMPT):len(PROMPT) + SAMPLE]
    check(body.startswith(PROMPT.encode()) and len(sampled) == SAMPLE
          and len(set(sampled)) >= 8, "the trainer printed the prompt and 32 bytes, "
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
    ids = torch.tensor([list(PROMPT.encode())], dtype=torch.long)
    with torch.no_grad():
        gen = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=SAMPLE,
                         do_sample=False, pad_token_id=0)
    theirs = bytes(gen[0, ids.shape[1]:].tolist())
    check(theirs == sampled, f"greedy {SAMPLE}-byte continuation of {PROMPT!r}: transformers "
          f"{theirs!r}, clgrad-train {sampled!r}")


def run_clgrad(train, model_dir, data, tmp):
    init, m_csv = os.path.join(tmp, "init.st"), os.path.join(tmp, "m.csv")
    cmd = [train, "--task", "gpt", "--init-from", model_dir, "--data", data, "--quiet",
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


def check_fine_tuning(train, model_dir, data, tmp):
    got, meta = run_clgrad(train, model_dir, data, tmp)
    check(got is not None and len(got) == RUN["updates"],
          f"clgrad-train --init-from: {RUN['updates']} updates with --metrics")
    if got is None or len(got) != RUN["updates"]:
        return
    ref = torch_fine_tune(model_dir, meta, split_windows(data, SHAPE["n_positions"]))
    errs = [abs(g - r) / abs(r) for g, r in zip(got, ref)]
    for i, (g, r, e) in enumerate(zip(got, ref, errs)):
        print(f"      update {i + 1:2d}: loss clgrad {g:.6f}, transformers {r:.6f}, rel {e:.2e}")
    check(errs[0] <= FIRST_RTOL and max(errs) <= LOSS_RTOL,
          f"fine-tuning: {RUN['updates']} AdamW updates of {RUN['batch'] // RUN['micro']} "
          f"micro-batches, worst loss rel err {max(errs):.2e} (first {errs[0]:.2e}; limits "
          f"{LOSS_RTOL:g}, {FIRST_RTOL:g}); loss {ref[0]:.4f} -> {ref[-1]:.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True, help="clgrad-train")
    ap.add_argument("--logits", required=True, help="the gpt_hf_logits test program")
    ap.add_argument("--data", required=True, help="a text file to fine-tune on")
    ap.add_argument("--gpt2-small-shape", action="store_true",
                    help="only a and b, at GPT-2 small's shape (12 layers, 12 heads, 768 "
                    "wide, 1024 positions) with vocab 256 and GPT-2's init, 2 sequences")
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    if a.gpt2_small_shape:
        with tempfile.TemporaryDirectory() as tmp:
            shape = dict(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=256)
            model_dir = os.path.join(tmp, "random-gpt2-small")
            model = random_model(13, shape, init_range=0.02)
            model.save_pretrained(model_dir, safe_serialization=True)
            back = check_logits(a.logits, model_dir, model, tmp, 1024, n_seqs=2)
            check_round_trip(model_dir, back)
        return 1 if failures else 0
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "random-gpt2")
        model = random_model(11)
        model.save_pretrained(model_dir, safe_serialization=True)
        back = check_logits(a.logits, model_dir, model, tmp, SHAPE["n_positions"])
        check_round_trip(model_dir, back)
        check_training(a.train, model_dir, a.data, tmp)
        check_fine_tuning(a.train, model_dir, a.data, tmp)
    if failures:
        print(f"hf_gpt2_check: {len(failures)} failed", file=sys.stderr)
        return 1
    print("hf_gpt2_check: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
