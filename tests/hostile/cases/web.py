"""The web view's options and `fabric-lab report` given what they must refuse."""

from tests.hostile.inputs import Case

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4e90000000049454e44ae426082")
RUN = "results/exp/20250101-000000"
PARAMS = '{"experiment": "exp", "params": {"n": 1}, "status": "complete"}\n'
JOB = ("name: j\nservers: 2\ngpus_per_server: 2\nparallelism: {data: 4}\ncompute_s: 1\n"
       "gradient_bytes: 1M\n")


def _report(name: str, must_say: str, *, files: dict[str, bytes | str] | None = None,
            links: dict[str, str] | None = None, extra: list[str] | None = None) -> Case:
    return Case(f"web-report-{name}", ["fabric-lab", "report", "--results", "{dir}/results",
                                       *(extra or [])],
                files={f"{RUN}/params.json": PARAMS, **(files or {})}, links=links or {},
                must_say=must_say)


CASES: list[Case] = [
    *[Case(f"web-{command}-port-99999", ["fabric-lab", command, *args, "--web", "--web-port",
                                         "99999"], files=files, must_say="--web-port")
      for command, args, files in [("up", ["hpn7"], {}), ("demo", [], {}),
                                   ("train", ["job.yaml"], {"job.yaml": JOB})]],
    Case("web-up-port-negative", ["fabric-lab", "up", "hpn7", "--web", "--web-port", "-1"],
         must_say="--web-port"),
    Case("web-up-port-not-a-number", ["fabric-lab", "up", "hpn7", "--web-port", "http"],
         must_say="--web-port"),
    Case("web-up-host-not-an-address", ["fabric-lab", "up", "hpn7", "--web-host", "example.com"],
         must_say="--web-host"),
    _report("symlinked-png", "plot.png: a symbolic link", links={f"{RUN}/plot.png": "/etc/passwd"}),
    _report("symlinked-png-inside-results", "a symbolic link",
            files={"results/other.png": PNG}, links={f"{RUN}/plot.png": "{dir}/results/other.png"}),
    _report("symlinked-params", "params.json: a symbolic link",
            files={"results/exp/2/plot.png": PNG},
            links={"results/exp/2/params.json": "{dir}/results/exp/20250101-000000/params.json"}),
    _report("png-is-a-directory", "plot.png: not a regular file",
            files={f"{RUN}/plot.png/x": PNG}),
    _report("out-is-a-directory", "Is a directory", files={"page/keep": ""},
            extra=["--out", "{dir}/page"]),
    _report("out-under-a-file", "file: not a directory", files={"file": ""},
            extra=["--out", "{dir}/file/report.html"]),
    Case("web-report-results-is-a-file", ["fabric-lab", "report", "--results", "{dir}/results"],
         files={"results": PARAMS}, must_say="is not a directory"),
]
