"""torch_gpt_profile.py - torch_gpt_train.py --profile: the PyTorch step's
time split into the parts clgrad-train --profile reports, and the classifier.

The parts:
  gemm       the linear layers (nn.Linear: c_attn, the attention's c_proj,
             c_fc, the MLP's c_proj; addmm, so their bias adds and bias
             gradients too), forward and backward
  attention  what runs between c_attn and the attention's c_proj: the
             q/k/v split, the two batched matmuls, the mask and the softmax
  head       the classifier's matmul (ln_f's output @ wte^T) and its backward
  xent       the cross-entropy over the vocabulary and the loss sums
  other      the embedding, the LayerNorms, GELU, the residual adds
  accumulate the parameters' AccumulateGrad nodes (the micro-batches'
             gradients summed into .grad; counted in "other" by the
             reports, as clgrad's path B adds in place inside its kernels)
  optimizer  opt.step() and zero_grad
clgrad-train's split has no classifier of its own: its head's GEMMs are in
its GEMMs, its cross-entropy kernel (gpt_xent) in its other kernels.

How: forward, module hooks on every nn.Linear and nn.LayerNorm and on the
model itself time the stretches between them (the CPU runs each op
synchronously), and tag the autograd nodes each stretch created (those it
can reach that carry no tag yet) with its part; backward, a hook on each
node of the graph takes the time since the previous node finished, which
the engine's single CPU thread spends on that node. The hooks cost time of
their own: the profiled run is slower than a plain one, and what the parts
leave of its training time is the Python loop, the hooks and the batch
indexing."""

import time
from functools import partial

import torch.nn as nn

PARTS = ("gemm", "attention", "head", "xent", "other", "accumulate", "optimizer")
TAG = "clgrad_part"


class StepProfile:
    def __init__(self, model):
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.part, self.t = None, 0.0
        self.hooks = []
        for name, m in model.named_modules():
            if isinstance(m, nn.Linear):
                part = "gemm"
            elif isinstance(m, nn.LayerNorm):
                part = "other"
            else:
                continue
            after = "attention" if name.endswith("attn.c_attn") else \
                "head" if name == "ln_f" else "other"
            self.hooks += [
                m.register_forward_pre_hook(lambda _m, inputs, p=part: self._close(inputs[0], p)),
                m.register_forward_hook(lambda _m, _i, out, p=after: self._close(out, p))]
        self.hooks.append(model.register_forward_hook(
            lambda _m, _i, logits: self._close(logits, "xent")))

    def forward_begin(self):
        """Before the model's forward: the embedding's stretch opens."""
        self.part, self.t = "other", time.perf_counter()

    def _close(self, tensor, next_part):
        """Ends the open stretch: its time and the nodes it made are its
        part's; the next stretch is next_part's."""
        now = time.perf_counter()
        self.seconds[self.part] += now - self.t
        stack = [tensor.grad_fn] if tensor.grad_fn is not None else []
        while stack:
            node = stack.pop()
            if TAG in node.metadata:
                continue
            leaf = not node.next_functions and node.name().endswith("AccumulateGrad")
            node.metadata[TAG] = "accumulate" if leaf else self.part
            stack += [n for n, _ in node.next_functions if n is not None]
        self.part, self.t = next_part, time.perf_counter()

    def backward(self, loss):
        """loss.backward(), each node's time given to its part."""
        self._close(loss, None)
        nodes, stack, seen = [], [loss.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            nodes.append(node)
            stack += [n for n, _ in node.next_functions]
        handles = [n.register_hook(partial(self._node_done, n.metadata.get(TAG, "other")))
                   for n in nodes]
        self.t = time.perf_counter()
        loss.backward()
        for h in handles:
            h.remove()

    def _node_done(self, part, _grad_inputs, _grad_outputs):
        now = time.perf_counter()
        self.seconds[part] += now - self.t
        self.t = now

    def timed(self, part, fn):
        t0 = time.perf_counter()
        fn()
        self.seconds[part] += time.perf_counter() - t0

    def fields(self):
        """The JSON fields (clgrad-train's names, and the classifier's); the
        module hooks removed (the evaluation after it is not profiled)."""
        for h in self.hooks:
            h.remove()
        s = self.seconds
        return {"profile_gemm_s": s["gemm"], "profile_attention_s": s["attention"],
                "profile_other_s": s["other"] + s["accumulate"],
                "profile_optimizer_s": s["optimizer"],
                "profile_classifier_s": s["head"] + s["xent"],
                "profile_head_s": s["head"], "profile_xent_s": s["xent"],
                "profile_accumulate_s": s["accumulate"]}
