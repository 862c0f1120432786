// clblast_params.cc - the C++ half of clblast_params.h: CLBlast's C API has
// no way to read the parameters in use, its C++ API does.
#include "clblast_params.h"

#include <clblast.h>
#include <clblast_c.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" int clblast_params_get(cl_device_id device, const char *kernel, int precision,
                                  clblast_param *out, size_t cap, size_t *n)
{
    *n = 0;
    std::unordered_map<std::string, size_t> params;
    // RetrieveParameters catches CLBlast's own exceptions and returns a
    // status; the try also keeps std::bad_alloc from crossing into C.
    try {
        auto st = clblast::RetrieveParameters(device, kernel,
                                              static_cast<clblast::Precision>(precision), params);
        if (st != clblast::StatusCode::kSuccess)
            return static_cast<int>(st);
        std::vector<std::string> names;
        for (const auto &p : params)
            names.push_back(p.first);
        std::sort(names.begin(), names.end());
        for (size_t i = 0; i < names.size() && i < cap; i++) {
            std::snprintf(out[i].name, sizeof out[i].name, "%s", names[i].c_str());
            out[i].value = params[names[i]];
        }
        *n = names.size();
    } catch (...) {
        return static_cast<int>(clblast::StatusCode::kUnknownError);
    }
    return 0;
}

extern "C" int clblast_params_set(cl_device_id device, const char *kernel, int precision,
                                  const clblast_param *params, size_t n)
{
    std::vector<const char *> names(n);
    std::vector<size_t> values(n);
    for (size_t i = 0; i < n; i++) {
        names[i] = params[i].name;
        values[i] = params[i].value;
    }
    return static_cast<int>(CLBlastOverrideParameters(
        device, kernel, static_cast<CLBlastPrecision>(precision), n, names.data(), values.data()));
}
