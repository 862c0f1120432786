/* rng.c - xoshiro256** (Blackman & Vigna) with splitmix64 seeding. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

train_rng train_rng_seed(uint64_t seed, uint64_t stream)
{
    uint64_t x = seed;
    uint64_t mix = splitmix64(&x) ^ (stream * 0xd1342543de82ef95ull + 0x632be59bd9b4e019ull);
    train_rng r;
    for (int i = 0; i < 4; i++)
        r.s[i] = splitmix64(&mix);
    return r;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t train_rng_u64(train_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t train_rng_below(train_rng *r, uint64_t bound)
{
    /* Rejection of the short top range keeps every value equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do {
        x = train_rng_u64(r);
    } while (x >= limit);
    return x % bound;
}

float train_rng_uniform(train_rng *r, float lo, float hi)
{
    float u = (float)(train_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

double train_rng_normal(train_rng *r)
{
    /* u1 in (0, 1] keeps the logarithm finite; u2 in [0, 1). */
    double u1 = (double)((train_rng_u64(r) >> 11) + 1) * 0x1.0p-53;
    double u2 = (double)(train_rng_u64(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
