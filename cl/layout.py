# layout.py - the single source of the host/device interface of clgrad's
# own kernels: the word indices of the step block, and the ordered argument
# list of every kernel of accumulate.cl, stats.cl, prologue.cl and
# update.cl. tools/gen-layout.py turns it into clg_layout.h (the CLG_SB_*
# enum, one argument struct and setter per list, used by src/), the
# clg_layout.c tables (tests/test_kernel_abi.c compares them with what the
# device reports) and clg_layout.cl (the SB_* defines and one <NAME>_PARAMS
# parameter-list macro per list), which the build puts in front of
# common.cl. Edit only this file to change either side; the kernels and the
# launchers in src/kernels.c follow by name.
#
# This file is data, read by tools/gen-layout.py; it imports nothing.

# ---------------------------------------------------------------- step block
# The small device buffer the prologue kernel writes once per update and
# every other kernel reads. Checkpoints store it word by word, so an index
# is part of the file format: never renumber a word, add new ones in the
# free slots below STEP_BLOCK_WORDS.
#   (name, index, type, meaning)   type: "f" float bits, "u" uint
STEP_BLOCK_WORDS = 32

STEP_BLOCK = [
    ("GRAD_SCALE", 0, "f", "1/sum(w) * 1/loss_scale * clip_coef"),
    ("SKIP", 1, "u", "1 = this update is skipped"),
    ("LR", 2, "f", "scheduled lr of this update"),
    ("BC1", 3, "f", "1 - beta1^t"),
    ("BC2_SQRT", 4, "f", "sqrt(1 - beta2^t)"),
    ("T", 5, "u", "updates applied so far"),
    ("LOSS_SCALE", 6, "f", "current loss scale"),
    ("GROWTH", 7, "u", "clean updates since last scale change"),
    ("SKIPPED", 8, "u", "skipped updates"),
    ("SKIPPED_MICRO", 9, "u", "skipped micro-steps"),
    ("SUMSQ", 10, "f", "sum of squares of the raw accumulator"),
    ("GRAD_NORM", 11, "f", "norm of the normalized, unscaled grad"),
    ("CLIP_COEF", 12, "f", "clipping coefficient"),
    ("NONFINITE", 13, "u", "last update saw inf/NaN"),
    ("STICKY", 14, "u", "inf/NaN seen since the last host sync"),
    ("MICRO_OK", 15, "u", "current micro-step is finite"),
    ("MICRO_COUNT", 16, "u", "finite micro-steps in the cycle"),
    ("WEIGHT_SUM", 17, "f", "their weights"),
    ("SMALL_SUMSQ", 18, "f", "sum of squares of the first micro-step"),
    ("SMALL_WEIGHT", 19, "f", "its weight"),
    ("NOISE_G2", 20, "f", "EMA of the |G|^2 estimate"),
    ("NOISE_TR", 21, "f", "EMA of the tr(Sigma) estimate"),
    ("NOISE_SCALE", 22, "f", "B_simple = NOISE_TR / NOISE_G2"),
    ("NOISE_COUNT", 23, "u", "estimates folded into the EMA"),
]

# ---------------------------------------------------------------- kernels
# One entry per argument list. Kernels that share a list (so that one
# launcher in src/kernels.c serves them all) name it once.
#   name     the list: struct clg_args_<name>, clg__set_args_<name>(),
#            <NAME>_PARAMS in OpenCL C
#   kernels  "program:kernel" pairs (program = cl/<program>.cl) whose
#            parameter list is <NAME>_PARAMS
#   args     (name, OpenCL C type, meaning), in argument order. The type
#            is written as in a parameter list: address space, const,
#            base type, *, restrict. The host type follows from it: cl_mem
#            for a pointer, cl_<type> for a scalar.
SIGNATURES = [
    {
        "name": "accumulate",
        "kernels": ["accumulate:accumulate"],
        "args": [
            ("acc", "global void *", "accumulator chunk (ACC_DTYPE)"),
            ("g", "global const void *", "gradient chunk (G_DTYPE)"),
            ("w", "float", "weight of this micro-step"),
            ("first", "uint", "1: acc = w*g without reading acc"),
            ("n4", "ulong", "float4s in the chunk"),
            ("seed", "uint", "stochastic-rounding stream of this micro-step"),
            ("sb", "global const uint *", "step block (SKIP_MICRO: the verdict)"),
            ("partials", "global float *", "STATS: per-group sums of squares"),
            ("pbase", "ulong", "STATS: first partial of this chunk"),
        ],
    },
    {
        "name": "reduce",
        "kernels": ["accumulate:check_finite", "stats:acc_sumsq"],
        "args": [
            ("src", "global const void *", "chunk to reduce: gradient (G_DTYPE) or accumulator"),
            ("n4", "ulong", "float4s in the chunk"),
            ("partials", "global float *", "per-group sums of squares"),
            ("pbase", "ulong", "first partial of this chunk"),
        ],
    },
    {
        "name": "tensor_sumsq",
        "kernels": ["stats:tensor_sumsq"],
        "args": [
            ("acc", "global const void *", "accumulator chunk"),
            ("offset4", "global const ulong *", "per tensor: first float4"),
            ("count4", "global const ulong *", "per tensor: float4s"),
            ("out", "global float *", "per-tensor sums of squares"),
            ("obase", "ulong", "index in out of the chunk's first tensor"),
        ],
    },
    {
        "name": "prologue",
        "kernels": ["prologue:prologue"],
        "args": [
            ("sb", "global uint *", "step block"),
            ("partials", "global const float *", "main region of the partials"),
            ("n_main", "uint", "partials in that region"),
            ("weight_sum", "float", "sum of the cycle's weights (host count)"),
            ("lr", "float", "base learning rate"),
            ("warmup", "ulong", "schedule: warmup updates"),
            ("total", "ulong", "schedule: total updates"),
            ("min_lr", "float", "schedule: final lr"),
            ("beta1", "float", "bias correction 1"),
            ("beta2", "float", "bias correction 2"),
            ("max_norm", "float", "CLIP: clip_norm"),
            ("growth", "float", "dynamic loss scale: growth factor"),
            ("backoff", "float", "dynamic loss scale: backoff factor"),
            ("interval", "uint", "dynamic loss scale: growth interval"),
            ("scale_min", "float", "dynamic loss scale: lower clamp"),
            ("scale_max", "float", "dynamic loss scale: upper clamp"),
            ("noise_ema", "float", "NOISE: EMA factor"),
        ],
    },
    {
        "name": "fold",
        "kernels": ["prologue:micro_prologue", "prologue:fold_small"],
        "args": [
            ("sb", "global uint *", "step block"),
            ("partials", "global const float *", "partials"),
            ("base", "ulong", "first partial of the region"),
            ("n", "uint", "partials in the region"),
            ("weight", "float", "weight of the micro-step"),
        ],
    },
    {
        "name": "update",
        "kernels": ["update:update", "update_q:update_q"],
        "args": [
            ("p", "global void *restrict", "params chunk (MASTER_DTYPE)"),
            ("acc", "global const void *restrict", "accumulator chunk (ACC_DTYPE)"),
            ("g", "global const void *restrict", "PATH_C: last micro-step's gradients"),
            ("w_last", "float", "PATH_C: their weight"),
            ("acc_empty", "uint", "PATH_C: the accumulator holds nothing"),
            ("s0", "global void *restrict", "state 0 (momentum buffer, m; STATE_DTYPE)"),
            ("s1", "global void *restrict", "state 1 (v; STATE_DTYPE)"),
            ("s2", "global float *restrict", "state 2 (vmax, fp32)"),
            ("copy", "global void *restrict", "COPY_DTYPE: low-precision param copy"),
            ("group_params", "global const float2 *restrict",
             "!SINGLE_GROUP: (lr_mult, wd) per work-group"),
            ("lr_mult", "float", "SINGLE_GROUP: the group's lr multiplier"),
            ("wd", "float", "SINGLE_GROUP: the group's weight decay"),
            ("beta1", "float", "Adam/Lion beta1"),
            ("beta2", "float", "Adam/Lion beta2"),
            ("eps", "float", "Adam eps"),
            ("momentum", "float", "SGD momentum"),
            ("dampening", "float", "SGD dampening"),
            ("clip_value", "float", "CLIP_VALUE: bound"),
            ("sb", "global const uint *restrict", "step block"),
            ("s0_scale", "global float *restrict", "Q8/Q4 states: absmax per block of state 0"),
            ("s1_scale", "global float *restrict", "Q8/Q4 states: absmax per block of state 1"),
            ("seed", "uint", "stochastic rounding stream of this update and chunk"),
            ("n4", "ulong", "update_q: float4s in the chunk (the launch is rounded up)"),
        ],
    },
]

# Contrastive losses (cl/contrastive.cl, launched by src/contrastive_kernels.c):
# InfoNCE over a representation cache, with optional memory banks. A row
# side A is the list of rows a work-group owns, side B the columns; "bank"
# is a second list of columns (no gradient flows into it).
SIGNATURES += [
    {
        "name": "con_prep",
        "kernels": ["contrastive:con_prep"],
        "args": [
            ("q", "global const void *", "query rows (REP_DTYPE)"),
            ("k", "global const void *", "key rows (REP_DTYPE)"),
            ("n", "uint", "rows"),
            ("dim", "uint", "elements per row"),
            ("unit_rows", "uint", "1: cosine similarity (inverse norms), 0: dot products"),
            ("rq", "global float *", "per row: inverse norm of q"),
            ("rk", "global float *", "per row: inverse norm of k"),
        ],
    },
    {
        "name": "con_lse",
        "kernels": ["contrastive:con_lse"],
        "args": [
            ("a", "global const void *", "rows of side A (REP_DTYPE)"),
            ("ra", "global const float *", "their inverse norms"),
            ("na", "uint", "rows of A"),
            ("b", "global const void *", "rows of side B, the columns"),
            ("rb", "global const float *", "their inverse norms"),
            ("nb", "uint", "rows of B"),
            ("bank", "global const void *", "bank rows, more columns"),
            ("rbank", "global const float *", "their inverse norms"),
            ("nbank", "uint", "bank rows in use"),
            ("dim", "uint", "elements per row"),
            ("inv_tau", "float", "1 / temperature"),
            ("lse", "global float *", "per row of A: log-sum-exp of its logits"),
            ("cp", "global float *", "per row of A: 1 - softmax of its positive"),
            ("rloss", "global float *", "per row of A: its loss, -log softmax of its positive"),
        ],
    },
    {
        "name": "con_grad",
        "kernels": ["contrastive:con_grad"],
        "args": [
            ("a", "global const void *", "rows of side A (REP_DTYPE)"),
            ("ra", "global const float *", "their inverse norms"),
            ("na", "uint", "rows of A"),
            ("lse_a", "global const float *", "log-sum-exp of A's rows (direction A to B)"),
            ("cp_a", "global const float *", "1 - softmax of A's positives"),
            ("ca", "float", "weight of direction A to B"),
            ("b", "global const void *", "rows of side B, the columns"),
            ("rb", "global const float *", "their inverse norms"),
            ("nb", "uint", "rows of B"),
            ("lse_b", "global const float *", "log-sum-exp of B's rows (direction B to A)"),
            ("cp_b", "global const float *", "1 - softmax of B's positives"),
            ("cb", "float", "weight of direction B to A"),
            ("bank", "global const void *", "bank of B's side, more columns"),
            ("rbank", "global const float *", "their inverse norms"),
            ("nbank", "uint", "bank rows in use"),
            ("dim", "uint", "elements per row"),
            ("inv_tau", "float", "1 / temperature"),
            ("out", "global float *", "gradient w.r.t. A's normalized rows"),
        ],
    },
    {
        "name": "con_finish",
        "kernels": ["contrastive:con_finish"],
        "args": [
            ("x", "global const void *", "rows (REP_DTYPE)"),
            ("rx", "global const float *", "their inverse norms"),
            ("n", "uint", "rows"),
            ("dim", "uint", "elements per row"),
            ("unit_rows", "uint", "1: apply the normalization's backward"),
            ("g", "global float *", "in: gradient w.r.t. normalized rows; out: w.r.t. rows"),
        ],
    },
    {
        "name": "con_loss",
        "kernels": ["contrastive:con_loss"],
        "args": [
            ("rloss_q", "global const float *", "per query row: its loss (q to k)"),
            ("rloss_k", "global const float *", "per key row: its loss (k to q)"),
            ("n", "uint", "rows"),
            ("cq", "float", "weight of direction q to k"),
            ("ck", "float", "weight of direction k to q"),
            ("loss", "global float *", "the loss (one float)"),
        ],
    },
    {
        "name": "con_fill",
        "kernels": ["contrastive:con_fill"],
        "args": [
            ("dst", "global void *", "cache rows of one side (REP_DTYPE)"),
            ("row0", "ulong", "first cache row written"),
            ("rows", "uint", "rows copied"),
            ("dim", "uint", "elements per row"),
            ("src", "global const void *", "the caller's rows"),
            ("src_offset", "ulong", "element of the first row's first value"),
            ("src_stride", "ulong", "elements from one row to the next"),
            ("src_dtype", "uint", "clg_dtype of src: fp32, fp16 or bf16"),
        ],
    },
    {
        "name": "con_grad_out",
        "kernels": ["contrastive:con_grad_out"],
        "args": [
            ("src", "global const float *", "gradient rows of one side"),
            ("row0", "ulong", "first row copied"),
            ("rows", "uint", "rows copied"),
            ("dim", "uint", "elements per row"),
            ("scale", "float", "multiplier"),
            ("dst", "global void *", "the caller's buffer"),
            ("dst_offset", "ulong", "element of the first row's first value"),
            ("dst_stride", "ulong", "elements from one row to the next"),
            ("dst_dtype", "uint", "clg_dtype of dst: fp32, fp16 or bf16"),
        ],
    },
]
