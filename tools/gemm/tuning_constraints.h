/* tuning_constraints.h - which values of CLBlast's GEMM parameters a
 * tuning file may hold: the constraints CLBlast's own tuners and kernels
 * impose, written once as a table (tuning_constraints.c). A value outside
 * them is not a slower tuning but a broken one: CLBlast divides by it
 * (WGD=0: a crash in clblast::CeilDiv), sizes local memory by it
 * (WGD=65536: a hang), or its kernels silently compute on part of the
 * tile (WGD=3, MDIMCD=NDIMCD=32, MWG=48 with VWM=8: wrong products).
 *
 * Device-free checks (tuning_check_kernel_values, called by tuning_check,
 * so the parser refuses such a file):
 *   - each record names exactly CLBlast's parameters of its kernel (those of
 *     CLBlast 1.5 to 1.7, which are the same);
 *   - each value is one its tuner can produce (clblast_tuner_xgemm's four
 *     searches, clblast_tuner_xgemm_direct's two, the copy/pad/transpose
 *     tuners; plus KWI=8, which CLBlast's database holds from earlier
 *     tuners); XGEMM_MIN_INDIRECT_SIZE, which clgrad-tune chooses, is
 *     1..TUNING_MAX_VALUE;
 *   - the divisibility CLBlast's tuners demand of a configuration
 *     (XgemmSetConstraints, XgemmDirectSetConstraints: tile sizes multiples
 *     of threads times vector widths, KWG of KWI, ...) and the integer
 *     re-shaped tiles its kernels define (KDIMA = MDIMC*NDIMC/MDIMA).
 * Device checks (tuning_check_device, by tuning_load): each kernel's
 * work-group within CL_DEVICE_MAX_WORK_GROUP_SIZE and
 * CL_DEVICE_MAX_WORK_ITEM_SIZES, its local memory (the tuners'
 * ComputeLocalMemSize) within CL_DEVICE_LOCAL_MEM_SIZE. */
#ifndef TUNE_TUNING_CONSTRAINTS_H
#define TUNE_TUNING_CONSTRAINTS_H

#include "tuning_file.h"

#include <stddef.h>

/* Whether the table has kernel name: the kernels of CLBlast's GEMM routine
 * (its Xgemm class), the only ones a tuning may name. */
int tuning_known_kernel(const char *name);

/* 0, or -1 with the first constraint k breaks in err, naming the
 * parameters and their values. A kernel the table does not know is the
 * caller's to refuse (tuning_check does). */
int tuning_check_kernel_values(const tuning_kernel *k, char *err, size_t errlen);

typedef struct tuning_device_limits {
    size_t max_work_group;        /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    size_t max_work_item[2];      /* CL_DEVICE_MAX_WORK_ITEM_SIZES[0..1] */
    unsigned long long local_mem; /* CL_DEVICE_LOCAL_MEM_SIZE, bytes */
} tuning_device_limits;

/* Every kernel of t (which passed tuning_check) within the device's
 * limits: 0, or -1 with why. */
int tuning_check_device(const tuning *t, const tuning_device_limits *d, char *err,
                        size_t errlen);

#endif /* TUNE_TUNING_CONSTRAINTS_H */
