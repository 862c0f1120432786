/* tune_seeds.h - starting configurations for clgrad-tune, by device class:
 * configurations of CLBlast's GEMM kernels that were fast on devices of the
 * same kind, measured before the tuners run so that a fresh machine starts
 * near a good answer instead of depending on what a short tuner run finds.
 *
 * Where they come from: CLBlast's own database (src/database/kernels/xgemm
 * and xgemm_direct, single precision) for CPUs, NVIDIA, AMD and Intel GPUs,
 * and for CPUs also clgrad-tune's result on a 2-core AMD EPYC under PoCL
 * (bench/results/clblast-tuning-vm-quiet.tune: 2.47x CLBlast's defaults on
 * the trainer's GEMMs) with the 8-wide vectors of AVX-512 first (the
 * fastest of the table on a Xeon), then as it was. They are only starting points: each is checked and timed on
 * the device's own shapes like any candidate, and one CLBlast would refuse
 * or that computes wrongly is dropped. */
#ifndef TUNE_TUNE_SEEDS_H
#define TUNE_TUNE_SEEDS_H

#include <stddef.h>

typedef enum tune_device_class {
    TUNE_CLASS_CPU,
    TUNE_CLASS_NVIDIA_GPU,
    TUNE_CLASS_AMD_GPU,
    TUNE_CLASS_INTEL_GPU,
    TUNE_CLASS_OTHER
} tune_device_class;

typedef struct tune_seed {
    const char *kernel;   /* "Xgemm", "XgemmDirect", or a helper of Xgemm
                             ("Padtranspose", "Pad": tried with the chosen
                             Xgemm when no tuner found better) */
    const char *origin;   /* where it comes from, for the log */
    const char *params;   /* every parameter of the kernel: "NAME=VALUE ..." */
} tune_seed;

/* The class of a device from its CL_DEVICE_TYPE bits (is_cpu, is_gpu) and
 * CL_DEVICE_VENDOR. */
tune_device_class tune_device_class_of(int is_cpu, int is_gpu, const char *vendor);
const char *tune_device_class_name(tune_device_class c);

/* The seeds of class c, most promising first: *seeds and their count (0
 * for TUNE_CLASS_OTHER). */
size_t tune_seeds(tune_device_class c, const tune_seed **seeds);

#endif /* TUNE_TUNE_SEEDS_H */
