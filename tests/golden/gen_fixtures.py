#!/usr/bin/env python3
"""gen_fixtures.py - writes clgrad's golden reference fixtures (tests/golden/*.bin).

Each fixture replays a short training run (two fp32 tensors of 7 and 33
elements, gradient accumulation over k = 3 micro-steps) through an independent
implementation, PyTorch's optimizers (torch.optim, torch.nn.utils.clip_grad_norm_,
GradScaler's update rule) or optax (MultiSteps around adamw), and records the
inputs (initial params, every micro-step's gradient and weight) together with
what that implementation produced after every update (params, optimizer states,
loss scale, gradient norm). tests/test_golden.c feeds the same inputs to clgrad
and compares. The format is described in tests/golden/README.md and in
write_fixture() below.

Usage (regenerates every fixture):
    python3 tests/golden/gen_fixtures.py --out tests/golden/
"""

import argparse
import math
import os
import struct
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # before jax is imported
import torch

import jax
import jax.numpy as jnp
import optax

MAGIC = b"CLGGOLD1"
TRAILER = b"END!"
FORMAT_VERSION = 1

# Values of clgrad.h's enums (the C test passes them through unchanged).
CLG_SGD, CLG_ADAM, CLG_ADAMW = 0, 1, 2
NONFINITE_IGNORE, NONFINITE_SKIP_UPDATE, NONFINITE_SKIP_MICRO = 0, 1, 2
LOSS_SCALE_NONE, LOSS_SCALE_DYNAMIC = 0, 2
# Bit mask of the clgrad gradient paths the fixture is valid for.
PATH_A, PATH_C = 1, 2

SIZES = (7, 33)  # awkward sizes: not multiples of any vector width
N = sum(SIZES)
F32 = np.float32


def f32(x):
    """The fp32 value of x (what the C side reads back)."""
    return float(np.float32(x))


# ------------------------------------------------------------------ format


def write_fixture(path, hdr, groups, tensor_groups, params0, updates):
    """Writes one fixture, all little-endian:

    magic "CLGGOLD1"
    24 header words (u32 or f32, see HEADER_FIELDS)
    n_groups  x {f32 lr_mult, f32 weight_decay}
    n_tensors x {u32 count, u32 group}
    f32 params0[N]                       N = sum of counts, tensors in order
    n_updates x {
        u32 n_micro                      micro-steps fed in this cycle
        u32 updates_applied              clg_stats.updates after the cycle
        u32 skipped_updates              clg_stats.skipped_updates after it
        u32 skipped_micro_steps          clg_stats.skipped_micro_steps after it
        f32 loss_scale_in_cycle          scale the gradients were scaled with
        f32 loss_scale_after             scale after the cycle's update
        f32 grad_norm                    clip_grad_norm_'s total norm, NaN if n/a
        n_micro x { u32 finite, f32 weight, f32 grad[N] }
        f32 params_after[N]
        n_states x f32 state_after[N]    clgrad's state order
    }
    trailer "END!"
    """
    buf = bytearray(MAGIC)
    words = []
    for name, kind in HEADER_FIELDS:
        v = hdr[name]
        words.append(struct.pack("<I", int(v)) if kind == "u" else struct.pack("<f", v))
    buf += b"".join(words)
    for lr_mult, wd in groups:
        buf += struct.pack("<ff", lr_mult, wd)
    for size, g in zip(SIZES, tensor_groups):
        buf += struct.pack("<II", size, g)
    buf += np.asarray(params0, dtype="<f4").tobytes()
    for u in updates:
        buf += struct.pack("<IIII", len(u["micro"]), u["applied"], u["skipped"],
                           u["skipped_micro"])
        buf += struct.pack("<fff", u["scale_in"], u["scale_after"], u["grad_norm"])
        for finite, w, g in u["micro"]:
            buf += struct.pack("<If", int(finite), w)
            buf += np.asarray(g, dtype="<f4").tobytes()
        buf += np.asarray(u["params"], dtype="<f4").tobytes()
        assert len(u["states"]) == hdr["n_states"]
        for s in u["states"]:
            buf += np.asarray(s, dtype="<f4").tobytes()
    buf += TRAILER
    with open(path, "wb") as f:
        f.write(buf)
    return len(buf)


# Header words in file order: (name, "u" for u32 or "f" for f32).
HEADER_FIELDS = [
    ("version", "u"), ("optimizer", "u"), ("n_tensors", "u"), ("n_groups", "u"),
    ("n_updates", "u"), ("n_states", "u"), ("accum_steps", "u"), ("paths", "u"),
    ("nesterov", "u"), ("amsgrad", "u"), ("nonfinite", "u"), ("loss_scale_mode", "u"),
    ("loss_scale_interval", "u"),
    ("lr", "f"), ("beta1", "f"), ("beta2", "f"), ("eps", "f"), ("weight_decay", "f"),
    ("momentum", "f"), ("dampening", "f"), ("clip_norm", "f"),
    ("loss_scale_init", "f"), ("loss_scale_growth", "f"), ("loss_scale_backoff", "f"),
]
assert len(HEADER_FIELDS) == 24


def header(**kw):
    h = dict(version=FORMAT_VERSION, n_tensors=len(SIZES), n_groups=2, accum_steps=3,
             paths=PATH_A | PATH_C, nesterov=0, amsgrad=0, nonfinite=NONFINITE_IGNORE,
             loss_scale_mode=LOSS_SCALE_NONE, loss_scale_interval=0, lr=0.0, beta1=0.9,
             beta2=0.999, eps=1e-8, weight_decay=0.0, momentum=0.0, dampening=0.0,
             clip_norm=0.0, loss_scale_init=1.0, loss_scale_growth=2.0,
             loss_scale_backoff=0.5)
    h.update(kw)
    # Store the fp32 values: the reference implementations below receive
    # exactly the numbers clgrad will see.
    for name, kind in HEADER_FIELDS:
        if kind == "f":
            h[name] = f32(h[name])
    return h


# ------------------------------------------------------------------ inputs


def make_params(rng):
    return rng.standard_normal(N).astype(F32)


def make_grads(rng, n_updates, k, scales):
    """grads[u][j] = scales[u] * (mean direction + noise), fp32. The per-update
    scale varies the gradient norm so that clipping bites in some updates only
    and AMSGrad's running max differs from v."""
    out = []
    for u in range(n_updates):
        base = rng.standard_normal(N)
        out.append([(scales[u] * (base + 0.7 * rng.standard_normal(N))).astype(F32)
                    for _ in range(k)])
    return out


def split(flat):
    parts, o = [], 0
    for s in SIZES:
        parts.append(flat[o:o + s])
        o += s
    return parts


def cat(tensors):
    return np.concatenate([np.asarray(t, dtype=F32).reshape(-1) for t in tensors])


# ------------------------------------------------------------------ PyTorch


def torch_params(params0):
    return [torch.nn.Parameter(torch.tensor(p.copy())) for p in split(params0)]


def torch_groups(ps, hdr, groups, tensor_groups):
    """One torch param group per clgrad group: lr = lr * lr_mult, own weight decay."""
    out = []
    for gi, (lr_mult, wd) in enumerate(groups):
        members = [p for p, g in zip(ps, tensor_groups) if g == gi]
        out.append({"params": members, "lr": hdr["lr"] * lr_mult, "weight_decay": wd})
    return out


def set_mean_grad(ps, micro):
    """What backward leaves in .grad when each micro-step's loss is scaled by
    w_j / sum(w) (the mean over the cycle) and backward accumulates."""
    wsum = float(sum(w for _, w, _ in micro))
    for p in ps:
        p.grad = None
    for _, w, g in micro:
        for p, gp in zip(ps, split(g)):
            contrib = torch.tensor(gp) * (w / wsum)
            p.grad = contrib if p.grad is None else p.grad + contrib


def torch_states(opt, ps, kind, amsgrad):
    """Optimizer states in clgrad's order (docs/semantics.md)."""
    st = [opt.state[p] for p in ps]
    if kind == CLG_SGD:
        names = ["momentum_buffer"]
    else:
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if amsgrad else [])
    return [cat([s[n].detach().numpy() for s in st]) for n in names]


def run_torch(hdr, groups, tensor_groups, params0, grads, weights, make_opt):
    """Fixtures 1-3: plain accumulation, optional clip_grad_norm_, opt.step()."""
    ps = torch_params(params0)
    opt = make_opt(torch_groups(ps, hdr, groups, tensor_groups))
    updates = []
    for u, gs in enumerate(grads):
        micro = [(1, f32(weights[u][j]), gs[j]) for j in range(len(gs))]
        set_mean_grad(ps, micro)
        norm = float("nan")
        if hdr["clip_norm"] > 0:
            norm = float(torch.nn.utils.clip_grad_norm_(ps, hdr["clip_norm"]))
        opt.step()
        updates.append(dict(micro=micro, applied=u + 1, skipped=0, skipped_micro=0,
                            scale_in=1.0, scale_after=1.0, grad_norm=norm,
                            params=cat([p.detach().numpy() for p in ps]),
                            states=torch_states(opt, ps, hdr["optimizer"], hdr["amsgrad"])))
    return updates


def fixture_adamw_clip(rng):
    hdr = header(optimizer=CLG_ADAMW, n_updates=5, n_states=2, lr=0.02, beta1=0.9,
                 beta2=0.999, eps=1e-8, weight_decay=0.1, clip_norm=6.0)
    groups = [(1.0, hdr["weight_decay"]), (0.5, 0.0)]
    tensor_groups = [0, 1]
    params0 = make_params(rng)
    grads = make_grads(rng, 5, 3, [0.5, 2.0, 1.0, 3.0, 0.7])
    weights = [[1.0] * 3] * 5

    def make_opt(pg):
        return torch.optim.AdamW(pg, lr=hdr["lr"], betas=(hdr["beta1"], hdr["beta2"]),
                                 eps=hdr["eps"], weight_decay=hdr["weight_decay"],
                                 amsgrad=False, foreach=False)

    ups = run_torch(hdr, groups, tensor_groups, params0, grads, weights, make_opt)
    clipped = [u["grad_norm"] > hdr["clip_norm"] for u in ups]
    assert any(clipped) and not all(clipped), ("clipping must bite in some updates only", [u["grad_norm"] for u in ups])
    return hdr, groups, tensor_groups, params0, ups


def fixture_adam_amsgrad(rng):
    hdr = header(optimizer=CLG_ADAM, n_updates=5, n_states=3, amsgrad=1, lr=0.01,
                 beta1=0.9, beta2=0.6, eps=1e-8, weight_decay=0.05)
    groups = [(1.0, hdr["weight_decay"]), (2.0, 0.2)]
    tensor_groups = [0, 1]
    params0 = make_params(rng)
    # Shrinking gradients and a short beta2 memory: v falls below its running
    # max, so AMSGrad matters.
    grads = make_grads(rng, 5, 3, [3.0, 2.0, 1.0, 0.5, 0.3])
    weights = [[1.0] * 3] * 5

    def make_opt(pg):
        return torch.optim.Adam(pg, lr=hdr["lr"], betas=(hdr["beta1"], hdr["beta2"]),
                                eps=hdr["eps"], weight_decay=hdr["weight_decay"],
                                amsgrad=True, foreach=False)

    ups = run_torch(hdr, groups, tensor_groups, params0, grads, weights, make_opt)
    v, vmax = ups[-1]["states"][1], ups[-1]["states"][2]
    assert np.mean(vmax > v * 1.5) > 0.5, "AMSGrad's max must differ from v"
    return hdr, groups, tensor_groups, params0, ups


def fixture_sgd_nesterov(rng):
    hdr = header(optimizer=CLG_SGD, n_updates=5, n_states=1, nesterov=1, lr=0.05,
                 momentum=0.9, dampening=0.0, weight_decay=0.01)
    groups = [(1.0, hdr["weight_decay"]), (0.5, f32(0.001))]
    tensor_groups = [0, 1]
    params0 = make_params(rng)
    grads = make_grads(rng, 5, 3, [1.0, 1.0, 1.0, 1.0, 1.0])
    # Unequal micro-batch weights (e.g. item counts): the mean is weighted.
    weights = [[1.0, 2.0, 0.5], [3.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.25, 4.0, 2.0],
               [2.0, 2.0, 1.0]]

    def make_opt(pg):
        return torch.optim.SGD(pg, lr=hdr["lr"], momentum=hdr["momentum"],
                               dampening=hdr["dampening"], nesterov=True,
                               weight_decay=hdr["weight_decay"], foreach=False)

    ups = run_torch(hdr, groups, tensor_groups, params0, grads, weights, make_opt)
    return hdr, groups, tensor_groups, params0, ups


# ------------------------------------------------------------------ GradScaler


def amp_update_scale(scale, tracker, found_inf, growth, backoff, interval):
    """torch._amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu,
    amp_update_scale_cuda_kernel; the CPU kernel of torch >= 2.3 is the same).
    The installed torch 1.13 has only the CUDA kernel, so it is restated here:

        if found_inf: scale *= backoff; tracker = 0
        else:
            successful = tracker + 1
            if successful == interval:
                new_scale = float(scale * growth)
                if isfinite(new_scale): scale = new_scale
                tracker = 0
            else: tracker = successful
    All in fp32 (the scale is a float32 tensor)."""
    if found_inf:
        return F32(scale * F32(backoff)), 0
    successful = tracker + 1
    if successful == interval:
        new_scale = F32(scale * F32(growth))
        if np.isfinite(new_scale):
            scale = new_scale
        return scale, 0
    return scale, successful


def fixture_gradscaler(rng):
    """torch.cuda.amp.GradScaler's recipe with accumulation, replayed on CPU:
        for j in 1..k: scaler.scale(loss_j / k).backward()
        scaler.unscale_(opt); clip_grad_norm_(params, max_norm)
        scaler.step(opt)   # skipped when any grad is inf/NaN
        scaler.update()
    GradScaler itself disables itself without CUDA in torch 1.13 and its two
    kernels have no CPU implementation there, so the unscale and the scale
    update are restated with torch tensors, following grad_scaler.py:
    inv_scale = scale.double().reciprocal().float(); found_inf = any
    non-finite element; grads *= inv_scale."""
    hdr = header(optimizer=CLG_ADAMW, n_updates=6, n_states=2, lr=0.02, weight_decay=0.1,
                 clip_norm=6.0, loss_scale_mode=LOSS_SCALE_DYNAMIC, loss_scale_init=16.0,
                 loss_scale_growth=2.0, loss_scale_backoff=0.5, loss_scale_interval=2,
                 nonfinite=NONFINITE_IGNORE)  # dynamic scaling implies skip-update
    groups = [(1.0, hdr["weight_decay"]), (0.5, 0.0)]
    tensor_groups = [0, 1]
    params0 = make_params(rng)
    true_grads = make_grads(rng, 6, 3, [0.5, 2.0, 1.0, 3.0, 0.7, 1.5])
    inf_update, inf_micro, inf_elem = 2, 1, 7 + 12  # update 3, micro 2, tensor b

    ps = torch_params(params0)
    opt = torch.optim.AdamW(torch_groups(ps, hdr, groups, tensor_groups), lr=hdr["lr"],
                            betas=(hdr["beta1"], hdr["beta2"]), eps=hdr["eps"],
                            weight_decay=hdr["weight_decay"], foreach=False)
    scale, tracker = F32(hdr["loss_scale_init"]), 0
    applied = skipped = 0
    updates = []
    for u in range(6):
        scale_in = float(scale)
        micro = []
        for j in range(3):
            # What backward of scale * loss_j produces: the scaled gradient
            # (exact: the scale is a power of two). clgrad receives these.
            g = (true_grads[u][j] * scale).astype(F32)
            if u == inf_update and j == inf_micro:
                g[inf_elem] = np.inf
            micro.append((int(np.all(np.isfinite(g))), 1.0, g))
        set_mean_grad(ps, micro)  # sum of scale * loss_j / k
        inv_scale = torch.tensor([scale_in], dtype=torch.float32).double().reciprocal().float()
        found_inf = any(not torch.isfinite(p.grad).all() for p in ps)
        for p in ps:
            p.grad.mul_(inv_scale)
        norm = float(torch.nn.utils.clip_grad_norm_(ps, hdr["clip_norm"]))
        if found_inf:
            skipped += 1
            norm = float("nan")
        else:
            opt.step()
            applied += 1
        scale, tracker = amp_update_scale(scale, tracker, found_inf, hdr["loss_scale_growth"],
                                          hdr["loss_scale_backoff"], hdr["loss_scale_interval"])
        updates.append(dict(micro=micro, applied=applied, skipped=skipped, skipped_micro=0,
                            scale_in=scale_in, scale_after=float(scale), grad_norm=norm,
                            params=cat([p.detach().numpy() for p in ps]),
                            states=torch_states(opt, ps, CLG_ADAMW, 0)))
    seq = [u["scale_after"] for u in updates]
    assert seq == [16.0, 32.0, 16.0, 16.0, 32.0, 32.0], seq
    assert np.array_equal(updates[inf_update]["params"], updates[inf_update - 1]["params"])
    return hdr, groups, tensor_groups, params0, updates


# ------------------------------------------------------------------ optax


def fixture_optax_multisteps(rng):
    """optax.MultiSteps(adamw, every_k_schedule=3, should_skip_update_fn=
    optax.skip_not_finite): a non-finite micro-step leaves the MultiSteps state
    (accumulator, mini_step) as it was, so the cycle needs one more finite
    micro-step (optax/transforms/_accumulation.py, MultiSteps.update,
    _skip_update). The mean is a running (Welford) mean of the finite
    micro-steps. adamw = scale_by_adam (mu_hat / (sqrt(nu_hat) + eps)) +
    add_decayed_weights(wd, mask) + scale_by_learning_rate(-lr): the same
    update as torch's AdamW in real arithmetic. The mask turns weight decay
    off for tensor b, which is clgrad's group 1 with weight decay 0."""
    hdr = header(optimizer=CLG_ADAMW, n_updates=5, n_states=2, lr=0.01, beta1=0.9,
                 beta2=0.999, eps=1e-8, weight_decay=0.1, nonfinite=NONFINITE_SKIP_MICRO,
                 paths=PATH_A)
    groups = [(1.0, hdr["weight_decay"]), (1.0, 0.0)]
    tensor_groups = [0, 1]
    params0 = make_params(rng)
    grads = make_grads(rng, 5, 3, [1.0, 2.0, 0.5, 1.0, 1.5])
    nan_update, nan_pos, nan_elem = 1, 1, 3  # update 2: micro-steps ok, NaN, ok, ok

    inner = optax.adamw(learning_rate=hdr["lr"], b1=hdr["beta1"], b2=hdr["beta2"],
                        eps=hdr["eps"], weight_decay=hdr["weight_decay"],
                        mask={"a": True, "b": False})
    tx = optax.MultiSteps(inner, every_k_schedule=3,
                          should_skip_update_fn=optax.skip_not_finite)
    a0, b0 = split(params0)
    params = {"a": jnp.asarray(a0), "b": jnp.asarray(b0)}
    state = tx.init(params)
    update = jax.jit(tx.update)
    skipped_micro = 0
    updates = []
    for u in range(5):
        micro = [(1, 1.0, g) for g in grads[u]]
        if u == nan_update:
            bad = grads[u][0].copy() * F32(1.5)
            bad[nan_elem] = np.nan
            micro.insert(nan_pos, (0, 1.0, bad))
        step_before = int(state.gradient_step)
        for j, (finite, _, g) in enumerate(micro):
            ga, gb = split(g)
            upd, state = update({"a": jnp.asarray(ga), "b": jnp.asarray(gb)}, state, params)
            params = optax.apply_updates(params, upd)
            skipped_micro += 1 - finite
            emitted = int(state.gradient_step) != step_before
            assert emitted == (j == len(micro) - 1), (u, j)
        adam = state.inner_opt_state[0]
        assert int(adam.count) == u + 1
        updates.append(dict(micro=micro, applied=u + 1, skipped=0, skipped_micro=skipped_micro,
                            scale_in=1.0, scale_after=1.0, grad_norm=float("nan"),
                            params=cat([params["a"], params["b"]]),
                            states=[cat([adam.mu["a"], adam.mu["b"]]),
                                    cat([adam.nu["a"], adam.nu["b"]])]))
    return hdr, groups, tensor_groups, params0, updates



# ------------------------------------------------------------------ self-check


def read_fixture(path):
    """Parses a fixture back (the same layout the C test reads)."""
    data = open(path, "rb").read()
    assert data[:8] == MAGIC and data[-4:] == TRAILER, path
    o = 8
    hdr = {}
    for name, kind in HEADER_FIELDS:
        hdr[name] = struct.unpack_from("<I" if kind == "u" else "<f", data, o)[0]
        o += 4
    groups = [struct.unpack_from("<ff", data, o + 8 * i) for i in range(hdr["n_groups"])]
    o += 8 * hdr["n_groups"]
    tensors = [struct.unpack_from("<II", data, o + 8 * i) for i in range(hdr["n_tensors"])]
    o += 8 * hdr["n_tensors"]
    n = sum(c for c, _ in tensors)

    def arr():
        nonlocal o
        a = np.frombuffer(data, dtype="<f4", count=n, offset=o).astype(F32)
        o += 4 * n
        return a

    params0 = arr()
    ups = []
    for _ in range(hdr["n_updates"]):
        n_micro, applied, skipped, skipped_micro = struct.unpack_from("<IIII", data, o)
        scale_in, scale_after, norm = struct.unpack_from("<fff", data, o + 16)
        o += 28
        micro = []
        for _ in range(n_micro):
            finite, w = struct.unpack_from("<If", data, o)
            o += 8
            micro.append((finite, w, arr()))
        params = arr()
        states = [arr() for _ in range(hdr["n_states"])]
        ups.append(dict(micro=micro, applied=applied, skipped=skipped,
                        skipped_micro=skipped_micro, scale_in=scale_in,
                        scale_after=scale_after, grad_norm=norm, params=params,
                        states=states))
    assert o == len(data) - 4, path
    return hdr, groups, tensors, params0, ups


def contract_replay(hdr, groups, tensors, params0, ups):
    """docs/semantics.md in float64, from the fixture's inputs alone; returns
    the largest relative-to-(1 + |x|) gap to the fixture's expected values.
    A third, independent reading of the same contract: it tells a fixture bug
    from a clgrad bug."""
    gidx = np.concatenate([np.full(c, g) for c, g in tensors])
    lr_mult = np.array([g[0] for g in groups])[gidx]
    wd = np.array([g[1] for g in groups])[gidx]
    p = params0.astype(np.float64)
    st = [np.zeros_like(p) for _ in range(3)]
    t = 0
    scale, tracker = float(hdr["loss_scale_init"]), 0
    dyn = hdr["loss_scale_mode"] == LOSS_SCALE_DYNAMIC
    worst = 0.0
    for u in ups:
        L = scale if dyn else 1.0
        assert u["scale_in"] == L
        acc, W = np.zeros_like(p), 0.0
        for finite, w, g in u["micro"]:
            if hdr["nonfinite"] == NONFINITE_SKIP_MICRO and not np.all(np.isfinite(g)):
                continue
            acc += w * g.astype(np.float64)
            W += w
        nonfinite = not np.all(np.isfinite(acc))
        g = acc / (W * L)
        norm = float(np.sqrt(np.sum(g * g))) if not nonfinite else float("nan")
        if hdr["clip_norm"] > 0 and not nonfinite:
            g = g * min(1.0, hdr["clip_norm"] / (norm + 1e-6))
            worst = max(worst, abs(norm - u["grad_norm"]) / (1 + norm))
        if not (nonfinite and dyn):
            s = t + 1
            lr = hdr["lr"] * lr_mult
            if hdr["optimizer"] == CLG_SGD:
                g = g + wd * p
                b = g.copy() if s == 1 else hdr["momentum"] * st[0] + (1 - hdr["dampening"]) * g
                st[0] = b
                g = g + hdr["momentum"] * b if hdr["nesterov"] else b
                p = p - lr * g
            else:
                if hdr["optimizer"] == CLG_ADAM:
                    g = g + wd * p
                else:
                    p = p * (1 - lr * wd)
                b1, b2 = hdr["beta1"], hdr["beta2"]
                st[0] = b1 * st[0] + (1 - b1) * g
                st[1] = b2 * st[1] + (1 - b2) * g * g
                v = st[1]
                if hdr["amsgrad"]:
                    st[2] = np.maximum(st[2], st[1])
                    v = st[2]
                p = p - (lr / (1 - b1 ** s)) * st[0] / (np.sqrt(v) / math.sqrt(1 - b2 ** s)
                                                        + hdr["eps"])
            t += 1
        if dyn:
            if nonfinite:
                scale, tracker = scale * hdr["loss_scale_backoff"], 0
            else:
                tracker += 1
                if tracker == hdr["loss_scale_interval"]:
                    scale, tracker = scale * hdr["loss_scale_growth"], 0
            assert scale == u["scale_after"], (scale, u["scale_after"])
        assert t == u["applied"]
        worst = max(worst, float(np.max(np.abs(p - u["params"]) / (1 + np.abs(p)))))
        for i in range(hdr["n_states"]):
            worst = max(worst, float(np.max(np.abs(st[i] - u["states"][i])
                                            / (1 + np.abs(st[i])))))
    return worst


# ------------------------------------------------------------------ main

FIXTURES = [
    ("adamw_clip", 101, fixture_adamw_clip),
    ("adam_amsgrad", 102, fixture_adam_amsgrad),
    ("sgd_nesterov", 103, fixture_sgd_nesterov),
    ("gradscaler_adamw", 104, fixture_gradscaler),
    ("optax_multisteps", 105, fixture_optax_multisteps),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="directory for the .bin files (default: this script's)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, optax {optax.__version__}, jax {jax.__version__}, "
          f"numpy {np.__version__}, python {sys.version.split()[0]}")
    for name, seed, fn in FIXTURES:
        rng = np.random.default_rng(seed)
        hdr, groups, tensor_groups, params0, ups = fn(rng)
        hdr["n_updates"] = len(ups)
        path = os.path.join(args.out, name + ".bin")
        size = write_fixture(path, hdr, groups, tensor_groups, params0, ups)
        moved = float(np.max(np.abs(ups[-1]["params"] - params0)))
        norms = ", ".join("-" if math.isnan(u["grad_norm"]) else f"{u['grad_norm']:.3f}"
                          for u in ups)
        scales = ", ".join(f"{u['scale_after']:g}" for u in ups)
        print(f"{path}: {size} bytes, {len(ups)} updates, max |p - p0| {moved:.4f}, "
              f"norms [{norms}], scales [{scales}]")
        # The file parses back, and a float64 replay of docs/semantics.md
        # lands on the reference implementation's numbers.
        gap = contract_replay(*read_fixture(path))
        print(f"  float64 contract replay: max gap {gap:.2e}")
        assert gap < 2e-6, (name, gap)


if __name__ == "__main__":
    main()
