/* gpt_model_testutil.c - see gpt_model_testutil.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpt_internal.h"
#include "gpt_model_testutil.h"
#include "testutil.h"

clg_model *gmt_model(const gpt_shape *s)
{
    clg_config cfg = tu_config(CLG_ADAMW, 1e-3f, 1);
    clg_model *m = NULL;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    for (int i = 0; i < gpt_tensor_count(s); i++) {
        gpt_tensor_info t;
        gpt_tensor(s, i, &t);
        int id;
        OK(clg_model_add_tensor(m, t.name, gpt_tensor_size(&t), 0, &id));
        assert_int_equal(id, i);
        OK(clg_model_set_tensor_shape(m, id, (size_t)t.ndim, t.dims));
    }
    OK(clg_model_finalize(m));
    return m;
}
