/* optim.cl - the optimizer step, written once: the update variants' -D
 * defaults and the per-element step (SGD with momentum, dampening and
 * Nesterov; Adam, AdamW, Lion; AMSGrad, maximize, L2 or decoupled weight
 * decay). The build embeds it in front of update.cl (fp32 and bf16
 * states, a float4 per work-item), update_q.cl (Q8 and Q4 states, 16
 * elements at a time) and clgrad-bench's handrolled.cl (one element per
 * work-item, the scalars from the host), after common.cl. Semantics:
 * docs/semantics.md.
 *
 * Variants (-D; the host passes every one, the defaults are the program
 * built with no option): OPT (a clg_optimizer: OPT_SGD, OPT_ADAM,
 * OPT_ADAMW, OPT_LION, which clg_layout.cl defines from clgrad.h), MOMENTUM,
 * NESTEROV, AMSGRAD, MAXIMIZE, PATH_C (the last micro-step's gradients are
 * added here), COPY_DTYPE (DT_NONE), CLIP_VALUE, SINGLE_GROUP (lr_mult and
 * weight decay as arguments rather than from group_params), STATE_DTYPE
 * (DT_FP32 or DT_BF16: update.cl; DT_Q8 or DT_Q4: update_q.cl), STATE_SR
 * (stochastic rounding of the states), MASTER_DTYPE (DT_FP32 or DT_BF16
 * params); G_DTYPE, ACC_DTYPE and WG are common.cl's. */

#ifndef OPT
#define OPT OPT_ADAMW
#endif
#ifndef MOMENTUM
#define MOMENTUM 0
#endif
#ifndef NESTEROV
#define NESTEROV 0
#endif
#ifndef AMSGRAD
#define AMSGRAD 0
#endif
#ifndef MAXIMIZE
#define MAXIMIZE 0
#endif
#ifndef PATH_C
#define PATH_C 0
#endif
#ifndef COPY_DTYPE
#define COPY_DTYPE DT_NONE
#endif
#ifndef CLIP_VALUE
#define CLIP_VALUE 0
#endif
#ifndef SINGLE_GROUP
#define SINGLE_GROUP 1
#endif
#ifndef STATE_DTYPE
#define STATE_DTYPE DT_FP32
#endif
#ifndef STATE_SR
#define STATE_SR 0
#endif
#ifndef MASTER_DTYPE
#define MASTER_DTYPE DT_FP32
#endif

/* the optimizer's states: Adam's m and v, else one (SGD's momentum buffer,
 * Lion's m), or none for SGD without momentum */
#define OPT_STATES (OPT == OPT_ADAM || OPT == OPT_ADAMW ? 2 : OPT != OPT_SGD || MOMENTUM ? 1 : 0)

/* The scalars of one update of one param group: the step block's (written
 * by the prologue: gradient scale, skip flag, lr, bias corrections, step
 * count) and the arguments'. */
typedef struct optim_hyper {
    uint skip;       /* 1: every array keeps its bits */
    uint step;       /* updates so far, this one included */
    float scale;     /* of the accumulator: 1/sum(w), 1/loss scale, clip coefficient */
    float lr;        /* scheduled lr times the group's lr_mult */
    float wd;        /* the group's weight decay */
    float decay;     /* 1 - lr wd: decoupled weight decay */
    float step_size; /* lr / (1 - beta1^t) */
    float bc2_sqrt;  /* sqrt(1 - beta2^t) */
    float beta1, beta2, eps, momentum, dampening, clip_value;
} optim_hyper;

/* CLG_OPTIM_FUNCS(N) defines, for N elements at a time:
 *  - optim_hyperN: the optim_hyper of the group of row `row` of
 *    group_params (or of the arguments, SINGLE_GROUP);
 *  - optim_gradN: the gradient of elements [i N, i N + N): the accumulator
 *    (path C: plus w_last times the last micro-step's gradients), scaled,
 *    clipped, negated to maximize;
 *  - optim_stepN: one step from the param pv and the states *s0, *s1 (fp32,
 *    before the update); returns the new param and leaves the new states
 *    in *s0, *s1 (0 where the optimizer has none); AMSGrad's running
 *    maximum of v (fp32, s2) is read and written here.
 * A macro, not functions over one type, because each kernel file
 * instantiates it after its own FP_CONTRACT setting (update_q.cl turns
 * contraction into fma off; update.cl keeps the default), which then
 * holds for the formulas as it held when each file wrote them out. The
 * variants are constants, so the compiler drops the branches not taken. */
#define CLG_OPTIM_FUNCS(N)                                                                      \
    CLG_INLINE optim_hyper optim_hyper##N(global const uint *sb,                                \
                                          global const float2 *group_params, ulong row,         \
                                          float lr_mult, float wd, float beta1, float beta2,    \
                                          float eps, float momentum, float dampening,           \
                                          float clip_value)                                     \
    {                                                                                           \
        if (!SINGLE_GROUP) {                                                                    \
            const float2 gp = group_params[row];                                                \
            lr_mult = gp.x;                                                                     \
            wd = gp.y;                                                                          \
        }                                                                                       \
        optim_hyper h;                                                                          \
        h.skip = sb[SB_SKIP];                                                                   \
        h.scale = sb_float(sb, SB_GRAD_SCALE);                                                  \
        h.lr = sb_float(sb, SB_LR) * lr_mult;                                                   \
        h.step = sb[SB_T];                                                                      \
        h.step_size = h.lr / sb_float(sb, SB_BC1);                                              \
        h.bc2_sqrt = sb_float(sb, SB_BC2_SQRT);                                                 \
        h.wd = wd;                                                                              \
        h.decay = 1.0f - h.lr * wd;                                                             \
        h.beta1 = beta1;                                                                        \
        h.beta2 = beta2;                                                                        \
        h.eps = eps;                                                                            \
        h.momentum = momentum;                                                                  \
        h.dampening = dampening;                                                                \
        h.clip_value = clip_value;                                                              \
        return h;                                                                               \
    }                                                                                           \
    CLG_INLINE float##N optim_grad##N(global const void *acc, global const void *g, ulong i,    \
                                      float w_last, uint acc_empty, const optim_hyper *h)       \
    {                                                                                           \
        float##N a;                                                                             \
        if (PATH_C) {                                                                           \
            /* acc_empty: a one-micro-step cycle, the accumulator holds nothing */              \
            a = w_last * load_grad##N(g, i);                                                    \
            if (!acc_empty)                                                                     \
                a += load_acc##N(acc, i);                                                       \
        } else {                                                                                \
            a = load_acc##N(acc, i);                                                            \
        }                                                                                       \
        float##N gr = a * h->scale;                                                             \
        if (CLIP_VALUE)                                                                         \
            gr = clamp(gr, -h->clip_value, h->clip_value);                                      \
        if (MAXIMIZE)                                                                           \
            gr = -gr;                                                                           \
        return gr;                                                                              \
    }                                                                                           \
    CLG_INLINE float##N optim_step##N(float##N gr, float##N pv, float##N *s0, float##N *s1,     \
                                      global float *s2, ulong i, const optim_hyper *h)          \
    {                                                                                           \
        const float##N s0_old = *s0, s1_old = *s1;                                              \
        float##N s0_new = 0.0f, s1_new = 0.0f;                                                  \
        if (OPT == OPT_SGD) {                                                                   \
            if (h->wd != 0.0f)                                                                  \
                gr += h->wd * pv;                                                               \
            if (MOMENTUM) {                                                                     \
                s0_new = h->step == 1u ? gr                                                     \
                                       : h->momentum * s0_old + (1.0f - h->dampening) * gr;     \
                if (NESTEROV)                                                                   \
                    gr += h->momentum * s0_new;                                                 \
                else                                                                            \
                    gr = s0_new;                                                                \
            }                                                                                   \
            pv -= h->lr * gr;                                                                   \
        } else if (OPT == OPT_ADAM || OPT == OPT_ADAMW) {                                       \
            if (OPT == OPT_ADAMW)                                                               \
                pv *= h->decay;                                                                 \
            else if (h->wd != 0.0f)                                                             \
                gr += h->wd * pv;                                                               \
            /* torch: exp_avg.lerp_(grad, 1 - beta1) */                                         \
            s0_new = s0_old + (1.0f - h->beta1) * (gr - s0_old);                                \
            s1_new = h->beta2 * s1_old + (1.0f - h->beta2) * gr * gr;                           \
            float##N v = s1_new;                                                                \
            if (AMSGRAD) {                                                                      \
                const float##N vmax_old = vload##N(i, s2);                                      \
                v = fmax(vmax_old, v);                                                          \
                vstore##N(h->skip ? vmax_old : v, i, s2);                                       \
            }                                                                                   \
            pv -= h->step_size * (s0_new / (sqrt(v) / h->bc2_sqrt + h->eps));                   \
        } else if (OPT == OPT_LION) {                                                           \
            pv *= h->decay;                                                                     \
            pv -= h->lr * sign(h->beta1 * s0_old + (1.0f - h->beta1) * gr);                     \
            s0_new = h->beta2 * s0_old + (1.0f - h->beta2) * gr;                                \
        }                                                                                       \
        *s0 = s0_new;                                                                           \
        *s1 = s1_new;                                                                           \
        return pv;                                                                              \
    }
