"""Host values as clgrad takes them: numpy arrays as they are, and torch
tensors through numpy (t.detach().cpu().numpy()), so that a torch.nn
parameter or its .grad can be handed over without a conversion of the
caller's; torch is never imported here (a tensor is recognized by its
class)."""
import numpy as np


def is_torch_tensor(value):
    """True for a torch.Tensor or a subclass (torch.nn.Parameter)."""
    return any(c.__module__ == "torch" and c.__name__ == "Tensor" for c in type(value).__mro__)


def host_array(value, what):
    """value as a numpy array: a torch tensor detached and copied to the
    host (a tensor numpy cannot hold, bfloat16 or sparse, raises a
    TypeError saying so), anything else through np.asarray."""
    if not is_torch_tensor(value):
        return np.asarray(value)
    try:
        return value.detach().cpu().numpy()
    except (TypeError, RuntimeError) as e:
        raise TypeError("clgrad: %s: a torch tensor (%s, %s) is taken through numpy, which "
                        "cannot hold it: %s; convert it first, e.g. t.float()"
                        % (what, value.dtype, value.layout, e)) from None
