/* stream.cl - STREAM copy and triad (McCalpin): the bandwidth a device
 * really delivers to a simple streaming kernel, which clgrad-bench puts
 * next to every fused and hand-rolled case. VW (build option, default 4)
 * floats per work-item, one vector per work-item (no loop), n counts
 * vectors. STREAM counts copy as 8 and every triad as 12 bytes per element.
 *
 * Three forms of the triad, the bench keeps the fastest (clpeak style):
 * the classic a = b + s*c; the same with non-temporal stores (where the
 * compiler has them), which spares the read-for-ownership a write-allocate
 * cache does for a line it is about to overwrite (the classic triad moves
 * 16 bytes per element on a CPU while STREAM counts 12); and a = a + s*c in
 * place, the access pattern of every clgrad kernel (the written line was
 * just read). The best of the three is a fair ceiling for any kernel that
 * reads two arrays and writes one. */
#ifndef VW
#define VW 4
#endif

#if VW == 1
typedef float vecf;
#elif VW == 2
typedef float2 vecf;
#elif VW == 4
typedef float4 vecf;
#elif VW == 8
typedef float8 vecf;
#elif VW == 16
typedef float16 vecf;
#else
#error "VW must be 1, 2, 4, 8 or 16"
#endif

/* c = a */
__kernel void stream_copy(__global const vecf *restrict a, __global vecf *restrict c,
                          ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    c[i] = a[i];
}

/* a = b + s * c */
__kernel void stream_triad(__global vecf *restrict a, __global const vecf *restrict b,
                           __global const vecf *restrict c, float s, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    a[i] = b[i] + s * c[i];
}

/* a = a + s * c: b is unused (same arguments as stream_triad) */
__kernel void stream_triad_inplace(__global vecf *restrict a, __global const vecf *restrict b,
                                   __global const vecf *restrict c, float s, ulong n)
{
    (void)b;
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    a[i] = a[i] + s * c[i];
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_nontemporal_store)
/* a = b + s * c with non-temporal stores; absent where the compiler has no
 * such builtin (the bench then skips this form). */
__kernel void stream_triad_nt(__global vecf *restrict a, __global const vecf *restrict b,
                              __global const vecf *restrict c, float s, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    __builtin_nontemporal_store(b[i] + s * c[i], &a[i]);
}
#endif
#endif

/* Diagnostic: the triad as a grid-stride loop over a fixed number of
 * work-groups (the launch shape clgrad's kernels had before they went to
 * one float4 per work-item), to show what the launch shape alone costs. */
__kernel void stream_triad_gridstride(__global vecf *restrict a,
                                      __global const vecf *restrict b,
                                      __global const vecf *restrict c, float s, ulong n)
{
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
        a[i] = b[i] + s * c[i];
}
