"""Result directories of the experiments that write rows as they measure them, with a table
missing that every run of theirs writes (copied in part, deleted): replot names the file."""

import json

from tests.hostile.inputs import Case


def _params(experiment: str) -> str:
    return json.dumps({"experiment": experiment, "status": "interrupted", "params": {}})


CASES: list[Case] = [
    # busbw.csv, iterations.csv and summary.csv are written together, after every size
    Case("rows-replot-job-run-without-summary", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": _params("rank-mapping"),
                "run/busbw.csv": "order,size,rep,busbw_gbs\nnaive,65536,0,4.0\n"},
         must_say="rank-mapping needs summary.csv, which is missing", status=2),
    # outcomes.csv, timeline.csv and events.csv are opened together, before the first trial
    Case("rows-replot-failover-without-outcomes", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": _params("failover"),
                "run/timeline.csv": "kind,trial,flow,t_s,goodput_bps\nuplink,0,f0,0.0,5e7\n"},
         must_say="failover needs outcomes.csv, which is missing", status=2),
    # tor_failure.csv and tor_timeline.csv likewise
    Case("rows-replot-segment-timeline-without-flows", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": _params("segment"),
                "run/tor_timeline.csv": "fabric,flow,t_s,goodput_bps\ndual-ToR,f0,0.0,5e7\n"},
         must_say="segment needs tor_failure.csv, which is missing", status=2),
]
