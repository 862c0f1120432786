/* rng.h - the trainer's own seeded random numbers (xoshiro256** seeded
 * through splitmix64), so that weights and data order depend only on the
 * seed, never on libc or the platform. */
#ifndef TRAIN_RNG_H
#define TRAIN_RNG_H

#include <stdint.h>

typedef struct train_rng {
    uint64_t s[4];
} train_rng;

/* A stream for (seed, stream id): different ids give independent streams. */
train_rng train_rng_seed(uint64_t seed, uint64_t stream);
uint64_t train_rng_u64(train_rng *r);
/* Uniform in [0, bound), unbiased; bound > 0. */
uint64_t train_rng_below(train_rng *r, uint64_t bound);
/* Uniform in [lo, hi) with 24 random bits. */
float train_rng_uniform(train_rng *r, float lo, float hi);
/* Standard normal (Box-Muller on two 53-bit uniforms, the cosine branch
 * only, so that each draw takes exactly two u64s and no state is kept). */
double train_rng_normal(train_rng *r);

#endif /* TRAIN_RNG_H */
