"""opt.param_groups: torch.optim's list of group dicts, as views of the
optimizer's parameter groups. A group's "lr" reads what its updates use
(the optimizer's lr times the group's multiplier, clgrad's float32
values) and is settable, from the next update on, as torch.optim's is;
everything else is fixed when the optimizer is created: setting it raises
TypeError (a key torch.optim's groups do not have: KeyError), so that no
assignment is silently ignored."""
import collections.abc

from ._clgrad_cffi import lib

# The hyperparameters torch.optim's groups carry, per optimizer, beside
# params, lr and weight_decay: (key, value from the clg_config).
_HYPER = {
    lib.CLG_ADAMW: (("betas", lambda c: (c.beta1, c.beta2)), ("eps", lambda c: c.eps),
                    ("amsgrad", lambda c: bool(c.amsgrad)),
                    ("maximize", lambda c: bool(c.maximize))),
    lib.CLG_SGD: (("momentum", lambda c: c.momentum), ("dampening", lambda c: c.dampening),
                  ("nesterov", lambda c: bool(c.nesterov)),
                  ("maximize", lambda c: bool(c.maximize))),
    lib.CLG_LION: (("betas", lambda c: (c.beta1, c.beta2)),),
}
_HYPER[lib.CLG_ADAM] = _HYPER[lib.CLG_ADAMW]


class ParamGroup(collections.abc.MutableMapping):
    """Group i of opt (its optimizer kept alive, as a view keeps it):
    "params" (the tensor names), "lr" (settable), "weight_decay" and the
    optimizer's hyperparameters."""

    def __init__(self, opt, i):
        self._opt, self._i = opt, i

    def _values(self):
        opt, group = self._opt, self._opt._groups[self._i]
        cfg = opt._cfg()
        values = {"params": list(group.names), "lr": opt._group_lr(self._i),
                  "weight_decay": float(group.weight_decay)}
        values.update((key, get(cfg)) for key, get in _HYPER[cfg.optimizer])
        return values

    def __getitem__(self, key):
        return self._values()[key]

    def __setitem__(self, key, value):
        if key == "lr":
            self._opt._set_group_lr(self._i, value)
        elif key in self._values():
            raise TypeError("clgrad: param_groups[%d][%r] is fixed when the optimizer is "
                            "created; only 'lr' can be set" % (self._i, key))
        else:
            raise KeyError("clgrad: param_groups[%d] has no key %r (clgrad would ignore it); "
                           "its keys are %s" % (self._i, key, sorted(self._values())))

    def __delitem__(self, key):
        raise TypeError("clgrad: param_groups[%d]: keys cannot be deleted" % self._i)

    def __iter__(self):
        return iter(self._values())

    def __len__(self):
        return len(self._values())

    def __repr__(self):
        return "ParamGroup(%r)" % self._values()
