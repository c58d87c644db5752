"""The main job behind `make run`.

Today (foundation stage) it starts a real local RocketMQ cluster, checks it through this
project's own protocol codec, and prints a summary. The producer, consumer and Spark issues turn
it into the real pipeline: Spark publishes a dataset, a consumer daemon aggregates it.
"""

from __future__ import annotations

import json
import sys
import time

from rocketmq_actors.logs import configure_logging
from rocketmq_actors.testing import probe
from rocketmq_actors.testing.cluster import LocalCluster


def main() -> int:
    configure_logging(level="info")
    started = time.monotonic()
    with LocalCluster() as cluster:
        info = probe.cluster_info(cluster.namesrv_addr)
        route = probe.topic_route(cluster.namesrv_addr, "TBW102")
        summary = {
            "namesrv": cluster.namesrv_addr,
            "clusters": {name: list(members) for name, members in info.clusters.items()},
            "brokers": {
                name: {str(k): v for k, v in data.broker_addrs.items()}
                for name, data in info.brokers.items()
            },
            "TBW102_queues": sum(q.write_queue_nums for q in route.queue_datas),
            "startup_s": round(cluster.timings["total_s"], 2),
        }
    summary["total_s"] = round(time.monotonic() - started, 2)
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
