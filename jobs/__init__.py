"""Training jobs on a fabric: servers with GPUs and NVLink, NCCL-style collectives as schedules,
a runner over the fabric's hosts, nccl-tests reports (`fabric-lab perf`) and iterations
(`fabric-lab train`)."""
