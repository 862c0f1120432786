"""clgrad.Contrastive against torch autograd in float64 of the loss clgrad.h
defines (l_ij = u_i.v_j / tau, u and v the rows, L2-normalized unless
normalize is off; L = c_qk sum_i (lse_j l_ij - l_ii) + c_kq sum_j (lse_i
l_ij - l_jj), the banks' rows extra columns): the loss and every row's
gradient of a batch filled in two micro-batches (one from numpy, one from
a strided pyopencl array), with banks (ContAccum) and their checkpoint,
and GradCache end to end: an encoder's parameter gradient from the cached
rows' gradients, through opt.step with the micro-batches' weights, is the
one big batch's (the params after an SGD update). Tolerance 1e-5 relative,
1e-6 absolute (fp32 kernels)."""
import numpy as np
import pyopencl.array as cla
import pytest
import torch
import torch.nn.functional as F

import clgrad

RTOL, ATOL = 1e-5, 1e-6


def reference(q, k, tau, symmetric=True, normalize=True, bank_q=None, bank_k=None):
    """(loss, dL/dq, dL/dk) in float64."""
    q = torch.tensor(q, dtype=torch.float64, requires_grad=True)
    k = torch.tensor(k, dtype=torch.float64, requires_grad=True)
    unit = (lambda x: F.normalize(x, dim=1, eps=1e-12)) if normalize else (lambda x: x)
    u, v = unit(q), unit(k)
    extra = lambda b: unit(torch.tensor(b, dtype=torch.float64)) if b is not None else None  # noqa
    bq, bk = extra(bank_q), extra(bank_k)
    n = len(q)
    cols_k = torch.cat([v, bk]) if bk is not None else v
    logits = u @ cols_k.T / tau
    diag = (u * v).sum(1) / tau
    loss = (torch.logsumexp(logits, 1) - diag).sum()
    if symmetric:
        cols_q = torch.cat([u, bq]) if bq is not None else u
        loss = (loss + (torch.logsumexp(v @ cols_q.T / tau, 1) - diag).sum()) / (2 * n)
    else:
        loss = loss / n
    loss.backward()
    return loss.item(), q.grad.numpy(), k.grad.numpy()


def rows(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


@pytest.mark.parametrize("symmetric, normalize", [(True, True), (False, True), (True, False)])
def test_loss_and_grads(ctx, symmetric, normalize):
    B, d, n, tau = 8, 16, 6, 0.1
    q, k = rows(1, n, d), rows(2, n, d)
    if not normalize:
        q, k = q / 4, k / 4  # dot products of a sane size
    c = clgrad.Contrastive(ctx, B, d, temperature=tau, symmetric=symmetric, normalize=normalize)
    c.fill("query", 0, q[:3])
    c.fill("key", 0, torch.from_numpy(k[:3]))
    # rows 3..5 from the device, 20 floats apart: a strided view of a wider array
    wide = np.zeros((3, 20), np.float32)
    for side, x in (("query", q), ("key", k)):
        wide[:, 2:2 + d] = x[3:]
        c.fill(side, 3, cla.to_device(ctx.queue, wide)[:, 2:2 + d])
    c.compute(n)
    loss, gq, gk = reference(q, k, tau, symmetric, normalize)
    assert c.loss == pytest.approx(loss, rel=RTOL)
    np.testing.assert_allclose(c.grad("query", 0, n), gq, rtol=RTOL, atol=ATOL)
    out = cla.zeros(ctx.queue, (2, d), np.float32)
    assert c.grad("key", 4, 2, scale=2.5, out=out) is out
    np.testing.assert_allclose(out.get(), 2.5 * gk[4:6], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(c.grad_view("key").get()[:n], gk, rtol=RTOL, atol=ATOL)


def test_banks_and_their_checkpoint(ctx, tmp_path):
    B, d, tau = 4, 8, 0.2
    c = clgrad.Contrastive(ctx, B, d, temperature=tau, bank_size=4)
    q1, k1, q2, k2 = (rows(s, B, d) for s in range(10, 14))
    for side, x in (("query", q1), ("key", k1)):
        c.fill(side, 0, x)
    c.compute(B)
    c.bank_push(B)
    assert c.bank_info() == (4, 0)
    np.testing.assert_array_equal(c.bank_download("query"), q1)
    for side, x in (("query", q2), ("key", k2)):
        c.fill(side, 0, x)
    c.compute(3)  # three rows, the bank's four as extra negatives
    loss, gq, gk = reference(q2[:3], k2[:3], tau, bank_q=q1, bank_k=k1)
    assert c.loss == pytest.approx(loss, rel=RTOL)
    np.testing.assert_allclose(c.grad("query", 0, 3), gq, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(c.grad("key", 0, 3), gk, rtol=RTOL, atol=ATOL)
    # attached, the banks travel with the optimizer's checkpoints
    opt = clgrad.SGD(ctx, {"w": 4})
    c.attach(opt, "con")
    opt.save(tmp_path / "x.ckpt")
    c.bank_reset()
    assert c.bank_info() == (0, 0)
    opt.load(tmp_path / "x.ckpt")
    assert c.bank_info() == (4, 0)
    np.testing.assert_array_equal(c.bank_download("key"), k1)
    del c
    opt.save(tmp_path / "y.ckpt")  # opt kept it alive: the banks are in the file
    other, fresh = clgrad.SGD(ctx, {"w": 4}), clgrad.Contrastive(ctx, B, d, bank_size=4)
    fresh.attach(other, "con")
    other.load(tmp_path / "y.ckpt")
    np.testing.assert_array_equal(fresh.bank_download("query"), q1)
    fresh.attach(None)  # detached: the checkpoint no longer has a place for the banks
    with pytest.raises(clgrad.Mismatch):
        other.load(tmp_path / "y.ckpt")


def test_gradcache_is_one_big_batch(ctx):
    """A shared linear encoder rep = x W; a batch of 7 pairs in micro-batches
    of 3 and 4: fill all, compute once, then per micro-batch the rows'
    gradient (scale n / m_j) through the encoder's backward, opt.step with
    weight m_j (mean mode). After the update: the big batch's SGD step."""
    din, d, tau, lr, split = 6, 8, 0.1, 0.1, (3, 4)
    n = sum(split)
    w0 = rows(30, din, d)
    xq, xk = rows(31, n, din), rows(32, n, din)
    opt = clgrad.SGD(ctx, {"W": w0}, lr=lr, accum_steps=len(split))
    c = clgrad.Contrastive(ctx, n, d, temperature=tau)
    starts = np.cumsum((0,) + split[:-1])
    for r0, m in zip(starts, split):  # first forward: no graph, rows into the cache
        c.fill("query", r0, xq[r0:r0 + m] @ w0)
        c.fill("key", r0, xk[r0:r0 + m] @ w0)
    c.compute(n)
    for r0, m in zip(starts, split):  # the backward of each micro-batch
        gq, gk = (c.grad(side, r0, m, scale=n / m) for side in ("query", "key"))
        opt.step(float(m), {"W": xq[r0:r0 + m].T @ gq + xk[r0:r0 + m].T @ gk})
    W = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    tq, tk = (torch.tensor(x, dtype=torch.float64) for x in (xq, xk))
    u, v = F.normalize(tq @ W, dim=1), F.normalize(tk @ W, dim=1)
    logits = u @ v.T / tau
    diag = logits.diagonal()
    loss = ((torch.logsumexp(logits, 1) - diag).sum() + (torch.logsumexp(logits.T, 1) - diag).sum())
    (loss / (2 * n)).backward()
    want = (W - lr * W.grad).detach().numpy()
    np.testing.assert_allclose(opt.download("W"), want, rtol=RTOL, atol=ATOL)
    assert not np.allclose(want, w0, atol=1e-3)


def test_estimate_and_memory(ctx):
    B, d, M = 32, 24, 16
    plan = clgrad.contrastive_estimate(B, d, bank_size=M)
    # clgrad.h: cache 2Bd x 4, grads 2Bd x 4, banks 2Md x 4, rows 4 (8B + 2M) + 4
    want = dict(cache=2 * B * d * 4, grads=2 * B * d * 4, banks=2 * M * d * 4,
                rows=4 * (8 * B + 2 * M) + 4)
    assert plan == dict(want, total=sum(want.values()))
    before = ctx.device_bytes
    c = clgrad.Contrastive(ctx, B, d, bank_size=M)
    assert c.memory() == plan and ctx.device_bytes == before + plan["total"]


def test_sample_seed():
    """clgrad.h's formula, written here in Python."""
    mask = (1 << 64) - 1

    def mix(x):
        z = (x + 0x9e3779b97f4a7c15) & mask
        z = ((z ^ z >> 30) * 0xbf58476d1ce4e5b9) & mask
        z = ((z ^ z >> 27) * 0x94d049bb133111eb) & mask
        return z ^ z >> 31
    for seed, update, position in ((0, 0, 0), (99, 3, 17), (mask, mask, mask)):
        h = mix(mix(mix(seed ^ 0x636c677261645f73) ^ update) ^ position)
        assert clgrad.sample_seed(seed, update, position) == h
