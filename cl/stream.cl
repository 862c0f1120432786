/* stream.cl - STREAM copy and triad (McCalpin): the bandwidth a device
 * really delivers to a simple streaming kernel, which clgrad-bench puts
 * next to every fused and hand-rolled case. VW (build option, default 4)
 * floats per work-item, n counts vectors; STREAM counts copy as 8 and
 * triad as 12 bytes per element. */
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

/* Diagnostic: the triad as a grid-stride loop over a fixed number of
 * work-groups (the launch shape of clgrad's update and accumulate
 * kernels), to tell the cost of the launch shape from the cost of the
 * arithmetic. */
__kernel void stream_triad_gridstride(__global vecf *restrict a,
                                      __global const vecf *restrict b,
                                      __global const vecf *restrict c, float s, ulong n)
{
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
        a[i] = b[i] + s * c[i];
}
