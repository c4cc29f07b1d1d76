"""SimAI workload files: read as SimAI's Workload.cc reads them (groups, sizes, units), every
fault named `file:line:col`, a workload larger than the fabric fitted by the stated rule, and
jobs.megatron's GPT written in the same format."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.megatron import Gpt, workload
from jobs.simai import SimaiError, bubble_fraction, parse, read, total_compute_ns

# The shape of SimAI's example/workload_analytical.txt (header as it writes it, `pp_comm`
# without its colon) on 32 GPUs, with a layer of each kind of collective and group.
MOE = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 vpp: 1 ga: 4 "
       "all_gpus: 32 checkpoints: 0 checkpoint_initiates: 0 pp_comm 4194304\n") + """6
grad_gather\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t2807758848\t100
grad_param_comm\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tREDUCESCATTER\t5615517696\t100
moe_grad_norm1\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER_DP_EP\t19327352832\t100
embedding_layer\t-1\t622731\tALLREDUCE\t50331648\t1\tNONE\t0\t15091072\tNONE\t0\t100
attention_column\t-1\t1750840\tALLGATHER\t50331648\t875420\tREDUCESCATTER\t0\t875420\tNONE\t0\t100
mlp_moelayer\t-1\t1\tALLTOALL_EP\t100663296\t1\tALLTOALL_EP\t100663296\t1\tNONE\t0\t100
"""


def test_a_simai_workload_lands_each_collective_on_its_group_and_size() -> None:
    w = parse(MOE.replace("checkpoints: 0", "checkpoints: 0 future_key: 7"), "moe.txt")
    assert w.ignored == ("future_key: 7",)  # as SimAI, a key it does not read is skipped
    assert (w.tp, w.ep, w.pp, w.ga, w.all_gpus, w.dp, w.pp_comm_bytes) == (2, 2, 2, 4, 32, 8,
                                                                           4194304)
    phases = {(layer.name, name): (p.collective, p.group, p.bytes)
              for layer, name, p in w.collectives()}
    assert phases == {
        ("grad_gather", "weight_grad"): ("all_gather", "dp", 2807758848),
        ("grad_param_comm", "weight_grad"): ("reduce_scatter", "dp", 5615517696),
        ("moe_grad_norm1", "weight_grad"): ("all_gather", "dp_ep", 19327352832),
        ("embedding_layer", "forward"): ("all_reduce", "tp", 50331648),
        ("attention_column", "forward"): ("all_gather", "tp", 50331648),
        ("attention_column", "input_grad"): ("reduce_scatter", "tp", 0),
        ("mlp_moelayer", "forward"): ("alltoall", "ep", 100663296),
        ("mlp_moelayer", "input_grad"): ("alltoall", "ep", 100663296),
    }
    assert w.layers[3].forward.compute_ns == 622731 and w.layers[3].weight_grad.compute_ns == 15091072
    assert w.layers[0].update_ns == 100
    # The groups: each kind partitions the 32 ranks, in groups of its degree, laid out as
    # Megatron: TP adjacent, then DP, then stages; EP within DP, DP_EP its stride.
    sizes = {"tp": 2, "dp": 8, "ep": 2, "dp_ep": 4}
    for group, size in sizes.items():
        groups = w.groups(group)
        assert sorted(r for g in groups for r in g) == list(range(32)), group
        assert {len(g) for g in groups} == {size}, group
    assert w.groups("tp")[0] == (0, 1)
    assert w.groups("dp")[0] == (0, 2, 4, 6, 8, 10, 12, 14)
    assert w.groups("dp")[-1][0] == 17  # stage 1, tp rank 1
    assert w.groups("ep")[:2] == ((0, 2), (4, 6))
    assert w.groups("dp_ep")[:2] == ((0, 4, 8, 12), (2, 6, 10, 14))
    for dp_group in w.groups("dp"):  # an EP group and a DP_EP group meet in one rank
        for ep in (g for g in w.groups("ep") if set(g) <= set(dp_group)):
            for dpe in (g for g in w.groups("dp_ep") if set(g) <= set(dp_group)):
                assert len(set(ep) & set(dpe)) == 1


def test_every_fault_of_a_workload_at_once_with_line_and_column(tmp_path: Path) -> None:
    header = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 3 ep: 1 pp: 2 "
              "all_gpus: 16 stray")
    layer = "a\t-1\t10\tALLREDUCE\t64\t1\tNONE\t0\t1\tBROADCAST\t8\t1"
    path = tmp_path / "bad.txt"
    path.write_text(f"{header}\n3\n{layer}\nb\t-1\tsoon\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\n")
    with pytest.raises(SimaiError) as caught:
        read(path)
    errors = caught.value.errors
    expect = [f"{path}:1:{header.index('stray') + 1}: error: 'stray' is not a `key: value` pair",
              f"{path}:1:1: error: all_gpus 16 is not a multiple of model_parallel_NPU_group x pp",
              f"{path}:1:1: error: pp 2 needs pp_comm",
              f"{path}:3:{layer.index('BROADCAST') + 1}: error: weight-gradient collective "
              f"'BROADCAST' is not one the lab runs",
              f"{path}:4:1: error: a layer line has 12 fields",
              f"{path}:2:1: error: line 2 says 3 layers; the file has 2 layer lines"]
    for start in expect:
        assert any(e.startswith(start) for e in errors), (start, errors)
    assert len(errors) == len(expect), errors
    assert caught.value.exit_status == 2
    assert str(caught.value).splitlines()[0] == errors[0]
    layer = "a\t-1\t1\tNONE\t0\t1\tNONE\t0\t99999999999999999\tNONE\t0\t1"
    path.write_text(f"DATA\n1\n{layer}\n")
    with pytest.raises(SimaiError, match=rf":3:{layer.index('9999') + 1}: error: weight-gradient "
                                         r"compute time 99999999999999999 is outside"):
        read(path)
    path.write_text(f"DATA\n1\n{layer.replace('99999999999999999', '5')}\n")
    fitted, notes = read(path).fit(6)  # DATA names no GPU count: it runs on the fabric's
    assert (fitted.all_gpus, fitted.dp) == (6, 6) and "on the fabric's 6 GPUs" in notes[0]
    for text, message in (("", ":1:1: error: empty"), ("TRAINING 1\n", ":1:1: error: parallelism policy 'TRAINING'")):
        path.write_text(text)
        with pytest.raises(SimaiError, match=message):
            read(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SimaiError, match=":1:1: error: not text"):
        read(path)


def test_a_workload_larger_than_the_fabric_is_fitted_by_the_stated_rule() -> None:
    big = MOE.replace("all_gpus: 32", "all_gpus: 9216").replace("pp: 2", "pp: 12").replace(
        "ep: 2", "ep: 16")
    w = parse(big, "big.txt")
    assert (w.tp, w.dp, w.pp, w.ep) == (2, 384, 12, 16)
    fitted, notes = w.fit(16)
    # TP kept; two DP replicas at least; the divisor of PP that puts the most GPUs to work
    # (12's divisors 1, 2, 4 use all 16; the largest); EP gcd(16, DP).
    assert (fitted.tp, fitted.dp, fitted.pp, fitted.ep, fitted.all_gpus) == (2, 2, 4, 2, 16)
    assert fitted.layers == w.layers  # the per-rank sizes and times are the workload's
    said = "\n".join(notes)
    for part in ("9216 GPUs (TP 2 x DP 384 x PP 12, EP 16) onto the fabric's 16",
                 "PP 12 -> 4", "DP 384 -> 2", "EP 16 -> 2"):
        assert part in said, said
    fitted, notes = w.fit(12)
    assert (fitted.dp, fitted.pp, fitted.all_gpus) == (2, 3, 12)
    fitted, notes = w.fit(10)  # 5 GPU pairs: one stage of 5 replicas uses them all
    assert (fitted.dp, fitted.pp, fitted.ep, fitted.all_gpus) == (5, 1, 1, 10)
    fitted, notes = w.fit(3)  # one pair: a single replica, the odd GPU idle
    assert (fitted.dp, fitted.pp, fitted.all_gpus) == (1, 1, 2)
    assert "1 of the fabric's 3 GPUs left idle" in notes
    assert parse(MOE).fit(32) == (parse(MOE), [])
    with pytest.raises(SimaiError, match="tensor parallelism 2 needs 2 GPUs"):
        w.fit(1)


def test_a_megatron_gpt_is_written_as_simai_reads_it() -> None:
    model = Gpt(layers=4, hidden=1024, seq=512, tp=2, pp=2, dp=2, ga=4, tflops=100.0)
    w = parse(workload(model), "gpt")
    assert (w.tp, w.pp, w.dp, w.ga, w.all_gpus) == (2, 2, 2, 4, 8)
    assert len(w.layers) == 4 // 2 * 4  # the stage's layers, four linear layers each
    activation = 512 * 1024 * 2
    assert w.pp_comm_bytes == activation // 2
    column, row = w.layers[0], w.layers[1]
    assert (column.forward.collective, column.forward.group, column.forward.bytes) == (
        "all_gather", "tp", activation)
    assert (row.input_grad.collective, row.weight_grad.collective, row.weight_grad.group) == (
        "all_gather", "all_reduce", "dp")
    assert column.weight_grad.bytes == 3 * 1024 * 1024 // 2 * 2  # QKV weights / TP, bf16
    # The QKV layer's FLOPs: 2 x tokens x weights / TP plus the attention core's 4 s^2 h / TP.
    flops = (2 * 512 * 3 * 1024 ** 2 + 4 * 512 ** 2 * 1024) / 2
    assert column.forward.compute_ns == round(flops / 100e12 * 1e9)
    per_layer = sum(2 * 512 * k * 1024 ** 2 for k in (3, 1, 4, 4)) / 2 + 4 * 512 ** 2 * 1024 / 2
    assert total_compute_ns(w) == pytest.approx(2 * 3 * per_layer / 100e12 * 1e9, rel=1e-3)


def test_the_pipeline_bubble_of_a_1f1b_schedule() -> None:
    assert bubble_fraction(1, 8) == 0.0
    assert bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert bubble_fraction(2, 8) == pytest.approx(1 / 9)
