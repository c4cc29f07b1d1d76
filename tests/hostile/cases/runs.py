"""Result directories a run or a replot cannot use: found before anything starts, one line each."""

import json

from tests.hostile.inputs import REPO, Case

JOB = str(REPO / "jobs/examples/gpt-3d.yaml")  # fits the default fabric, hpn7
PARAMS_NO_ROWS = json.dumps({"experiment": "ecmp-hashing", "status": "failed", "error": "boom"})

CASES: list[Case] = [
    Case("runs-run-out-is-a-file", ["fabric-lab", "run", "ecmp-hashing", "--out", "{dir}/taken"],
         files={"taken": "x\n"}, must_say="taken is a file, not a directory"),
    Case("runs-run-out-under-a-file",
         ["fabric-lab", "run", "ecmp-hashing", "--out", "{dir}/taken/run"],
         files={"taken": "x\n"}, must_say="taken is a file, not a directory"),
    Case("runs-run-results-is-a-file",
         ["fabric-lab", "run", "ecmp-hashing", "--results", "{dir}/taken"],
         files={"taken": "x\n"}, must_say="taken is a file, not a directory"),
    Case("runs-run-out-not-empty", ["fabric-lab", "run", "ecmp-hashing", "--out", "{dir}/old"],
         files={"old/imbalance.csv": "links\n2\n"}, must_say="old exists and is not an empty"),
    Case("runs-run-out-unwritable",
         ["fabric-lab", "run", "ecmp-hashing", "--out", "/sys/fabric-lab-run-out"],
         must_say="/sys/fabric-lab-run-out"),
    Case("runs-replot-not-a-result", ["fabric-lab", "replot", "{dir}"],
         must_say="no params.json"),
    Case("runs-replot-no-csv", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": PARAMS_NO_ROWS}, must_say="no CSV files"),
    Case("runs-replot-params-not-json", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": b"\x89PNG\r\n\x00\xff", "run/imbalance.csv": "links\n"},
         must_say="params.json: unreadable"),
    Case("runs-replot-rows-unparsable", ["fabric-lab", "replot", "{dir}/run"],
         files={"run/params.json": json.dumps({"experiment": "ecmp-hashing",
                                               "status": "complete"}),
                "run/imbalance.csv": "links,flows,trial,max_load,mean_load,imbalance\n"
                                     "2,2,0,2,1.0,lots\n"},
         must_say="plotting ecmp-hashing failed"),
    Case("runs-train-out-is-a-file", ["fabric-lab", "train", JOB, "--out", "{dir}/taken"],
         files={"taken": "x\n"}, must_say="taken is a file, not a directory"),
    Case("runs-train-out-not-empty", ["fabric-lab", "train", JOB, "--out", "{dir}/old"],
         files={"old/summary.json": "{}\n"}, must_say="old exists and is not an empty"),
    Case("runs-train-out-unwritable",
         ["fabric-lab", "train", JOB, "--out", "/sys/fabric-lab-train-out"],
         must_say="/sys/fabric-lab-train-out"),
]
