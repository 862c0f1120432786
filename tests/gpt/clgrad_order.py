"""clgrad_order.py - clgrad-train's data order in Python, for scripts that
feed another framework the batches clgrad-train trained on.

A second implementation of tools/common/rng.c (xoshiro256** seeded
through splitmix64, one stream per (seed, id)) and order.c (a Fisher-Yates
shuffle per epoch on stream 2^32 + epoch, batches cut in order, micro-batches
cut in order within a batch). tests/gpt/torch_train_parity.py checks it: a
batch out of order would move every loss after it."""

M64 = (1 << 64) - 1
ORDER_STREAM_BASE = 0x100000000


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Rng:
    """xoshiro256** on the stream (seed, stream), as train_rng_seed."""

    def __init__(self, seed, stream):
        x, first = _splitmix64(seed & M64)
        mix = first ^ ((stream * 0xD1342543DE82EF95 + 0x632BE59BD9B4E019) & M64)
        self.s = []
        for _ in range(4):
            mix, v = _splitmix64(mix)
            self.s.append(v)

    def u64(self):
        s = self.s
        result = (_rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def below(self, bound):
        limit = M64 - (M64 % bound)
        while True:
            x = self.u64()
            if x < limit:
                return x % bound


def epoch_order(seed, n, epoch):
    """The permutation of n samples clgrad-train uses in epoch (0-based)."""
    r = Rng(seed, ORDER_STREAM_BASE + epoch)
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = r.below(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def batches(seed, n, batch, updates):
    """The sample indices of each of the first `updates` updates, epoch after
    epoch (the last batch of an epoch may be short)."""
    out, epoch = [], 0
    while len(out) < updates:
        perm = epoch_order(seed, n, epoch)
        for s in range(0, n, batch):
            out.append(perm[s:s + batch])
            if len(out) == updates:
                break
        epoch += 1
    return out


def micro_batches(batch_indices, micro):
    """A batch cut into micro-batches of at most `micro`, in order."""
    return [batch_indices[i:i + micro] for i in range(0, len(batch_indices), micro)]
