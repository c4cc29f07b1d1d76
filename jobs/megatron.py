"""A Megatron-LM GPT's iteration written as a SimAI workload (jobs/simai.py), from its shapes:
what AICB generates by profiling, computed here from the FLOP count instead (no GPU needed).

    python -m jobs.megatron --layers 40 --hidden 5120 --seq 2048 --tp 2 --dp 8 --ga 4 > gpt13b.txt

Per transformer layer and microbatch, with tensor and sequence parallelism as Megatron runs
them: four linear layers (QKV, attention output, MLP up, MLP down), each a forward compute of
2 x tokens x its weights / TP FLOPs, the attention core's 4 x seq^2 x hidden / TP in the QKV
layer; the input gradient and the weight gradient each cost what the forward did. The column
layers all-gather the sequence-parallel activations (seq x micro_batch x hidden, 2 bytes) in the
forward pass and reduce-scatter them in the input gradient; the row layers the reverse. The
weight gradient of each linear layer is all-reduced across data-parallel ranks as the backward
pass reaches it (its weights / TP, 2 bytes: bf16 gradients, as DDP's buckets would carry them).
Compute times are FLOPs / `tflops` (the GPU's achieved rate: 150 TFLOP/s is an A100 at about
half its bf16 peak). The embedding's and LM head's communication is left out.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

BYTES_PER_VALUE = 2  # bf16 activations and gradients


@dataclass(frozen=True)
class Gpt:
    layers: int
    hidden: int
    seq: int
    micro_batch: int = 1
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ga: int = 1  # microbatches per iteration
    tflops: float = 150.0

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


def _ns(flops: float, tflops: float) -> int:
    return max(1, round(flops / (tflops * 1e12) * 1e9))


def workload(model: Gpt) -> str:
    """`model`'s iteration as SimAI workload text (one microbatch's layers on one stage)."""
    h, s, b, tp = model.hidden, model.seq, model.micro_batch, model.tp
    tokens = s * b
    activation = tokens * h * BYTES_PER_VALUE  # the full sequence, as gathered
    linears = (("attention_column", 3 * h * h, True, 4 * s * s * h * b),
               ("attention_row", h * h, False, 0),
               ("mlp_column", 4 * h * h, True, 0),
               ("mlp_row", 4 * h * h, False, 0))
    per_stage = max(1, model.layers // model.pp)
    lines = []
    for _ in range(per_stage):
        for name, weights, column, extra in linears:
            compute = _ns((2 * tokens * weights + extra) / tp, model.tflops)
            forward = ("ALLGATHER" if column else "REDUCESCATTER") if tp > 1 else "NONE"
            backward = ("REDUCESCATTER" if column else "ALLGATHER") if tp > 1 else "NONE"
            size = activation if tp > 1 else 0
            grads = weights // tp * BYTES_PER_VALUE if model.dp > 1 else 0
            lines.append("\t".join(str(v) for v in (
                name, -1, compute, forward, size, compute, backward, size,
                compute, "ALLREDUCE" if grads else "NONE", grads, 1)))
    pp_comm = f" pp_comm: {activation // tp}" if model.pp > 1 else ""
    header = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: 1 "
              f"pp: {model.pp} vpp: 1 ga: {model.ga} all_gpus: {model.gpus} checkpoints: 0 "
              f"checkpoint_initiates: 0{pp_comm}")
    return "\n".join([header, str(len(lines)), *lines]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("layers", None), ("hidden", None), ("seq", None),
                          ("micro-batch", 1), ("tp", 1), ("pp", 1), ("dp", 1), ("ga", 1)):
        parser.add_argument(f"--{name}", type=int, required=default is None, default=default)
    parser.add_argument("--tflops", type=float, default=150.0,
                        help="the GPU's achieved TFLOP/s (default 150)")
    args = parser.parse_args(argv)
    for key in ("layers", "hidden", "seq", "micro_batch", "tp", "pp", "dp", "ga"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')} must be at least 1")
    if not 0 < args.tflops < 1e6:
        parser.error("--tflops must be above 0")
    sys.stdout.write(workload(Gpt(args.layers, args.hidden, args.seq, args.micro_batch, args.tp,
                                  args.pp, args.dp, args.ga, args.tflops)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
