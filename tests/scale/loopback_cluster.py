"""A Ray cluster of two nodes on this machine, every process of it on 127.0.0.1 only.

What it takes with Ray 2.60 (docs/scaling.md#two-nodes-on-one-machine says the same to users):

- **Loopback.** Ray swaps `127.0.0.1` for the machine's outward address wherever it is given
  (`--node-ip-address`, `--address`, `ray.init(address=...)`) unless
  `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`; with the node's address 127.0.0.1 its servers (GCS,
  raylet, object manager, workers, agents) listen on 127.0.0.1 alone, else on every
  interface. So every process here -- the nodes and the run that joins them -- has it at 0.
- **The second node.** `ray start --address=...` refuses to start a node with that setting at
  0 ("Multi-node Ray clusters are not supported on Windows and OSX"), and at 1 it dials the
  outward address. So the second node is started by the call `ray start --address` makes
  once its arguments are read (`ray._private.node.Node(RayParams(...), head=False)`, as
  Ray's own `ray.cluster_utils` does), with 127.0.0.1 as it is. The head is a plain
  `ray start --head`.
- **Authentication.** With `RAY_AUTH_MODE` unset, Ray turns token authentication on when a
  token file exists (`~/.ray/auth_token`, which any local `ray.init()` writes), so whether a
  node may join depends on the machine. Every process here has `RAY_AUTH_MODE=disabled`.
- **Nothing shared with other Ray instances on the machine.** Every port is chosen free here
  and pinned (GCS, node manager, object manager, the agents, metrics, each worker's port),
  the dashboard is off, and each node has a temp directory of its own (short: Unix socket
  paths must fit in 107 bytes).
- **Status soon.** The head's autoscaler reports every second, not every five
  (`AUTOSCALER_UPDATE_INTERVAL_S`), so that `ray status` (a second or two of CPU a call)
  lists a node that just joined at its first call.
- **Stopping one node.** `ray stop` stops every Ray process of the machine -- both nodes,
  and anyone else's Ray -- so it is never used here. A node is stopped as `ray stop` stops
  one: SIGTERM to its processes (those whose command line names its session directory, and
  their children: workers and agents), SIGKILL to what is left after a grace period.

The nodes run from directories of their own (not the project's), with no PYTHONPATH: an
actor can import the project only from the folder the run ships (`runtime_env.working_dir`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The environment of every process of the cluster, and of the runs that join it.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_USAGE_STATS_ENABLED": "0"}
#: The head's environment besides: its autoscaler reports every second.
HEAD_ENV = {"AUTOSCALER_UPDATE_INTERVAL_S": "1"}
HOST = "127.0.0.1"
#: The object store of each node (Ray's minimum is 75 MB; these tests store next to nothing).
OBJECT_STORE_BYTES = 100 * 1024 * 1024
#: Ports per node for its workers: the actors, the workers Ray starts ahead, replacements for
#: killed ones, and the driver's own core worker on the head.
WORKER_PORTS = 12
RAY = Path(sys.executable).with_name("ray")

# The node `ray start --address=GCS --node-ip-address=127.0.0.1 ...` starts, without the
# rewriting of 127.0.0.1 (see the module docstring). Arguments: one JSON object of RayParams.
_JOIN = """
import json, sys
import ray._private.node, ray._private.parameter
params = ray._private.parameter.RayParams(**json.loads(sys.argv[1]))
node = ray._private.node.Node(params, head=False, shutdown_at_exit=False, spawn_reaper=False)
print(json.dumps({"node_id": node.node_id, "node_ip_address": node.node_ip_address}))
"""


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 now (held together while they are chosen)."""
    held = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind((HOST, 0))
            held.append(sock)
        return [s.getsockname()[1] for s in held]
    finally:
        for sock in held:
            sock.close()


def _processes() -> dict[int, tuple[int, list[str]]]:
    """Every process of the machine: pid -> (parent pid, arguments), read from /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue  # a zombie is gone but for its parent's wait
        found[int(entry)] = (int(fields[1]), args.split("\0"))
    return found


@dataclass
class Node:
    """One node of the cluster: its temp directory, its ports, and its id once started."""

    name: str
    temp_dir: Path
    cwd: Path
    num_cpus: int
    resources: dict[str, float] = field(default_factory=dict)
    node_id: str = ""
    output: str = ""  # what starting it printed

    def pids(self) -> set[int]:
        """The node's processes: those whose arguments name its session directory (raylet,
        log monitor; on the head also the GCS, monitor and dashboard), and their children."""
        table = _processes()
        mark = f"{self.temp_dir}/session_"
        mine = {pid for pid, (_, args) in table.items()
                if any(a.startswith("--") and mark in a for a in args)}
        grown = True
        while grown:
            grown = False
            for pid, (parent, _) in table.items():
                if parent in mine and pid not in mine:
                    mine.add(pid)
                    grown = True
        mine.discard(os.getpid())
        return mine

    def stop(self, grace: float = 10.0) -> None:
        """Stop this node alone, as `ray stop` stops one: SIGTERM, then SIGKILL after `grace`."""
        deadline = time.monotonic() + grace
        signalled: set[int] = set()
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                return
            for pid in left - signalled:
                _signal(pid, signal.SIGTERM)
            signalled |= left
            time.sleep(0.2)
        for _ in range(50):
            left = self.pids()
            if not left:
                return
            for pid in left:
                _signal(pid, signal.SIGKILL)
            time.sleep(0.1)
        raise AssertionError(f"the {self.name} node's processes outlived SIGKILL: {left}")


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


class LoopbackCluster:
    """A head node and further nodes on this machine, on 127.0.0.1 (see the module docstring).

    `stop()` stops every node it started, whatever state they are in; use it in a `finally`.
    """

    def __init__(self) -> None:
        # /tmp, not pytest's temp directory: socket paths under it would be too long.
        self.root = Path(tempfile.mkdtemp(prefix="olo-ray-", dir="/tmp"))
        self.nodes: list[Node] = []
        self.port = 0

    @property
    def address(self) -> str:
        """The GCS address (`execution.ray.address`)."""
        return f"{HOST}:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment of a process of the cluster or of a run joining it."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "RAY_ADDRESS") and not k.startswith("RAY_AUTH")}
        env.update(RAY_ENV)
        return env

    def _node(self, name: str, num_cpus: int, resources: dict[str, float]) -> Node:
        node = Node(name, self.root / name, self.root / f"{name}-cwd", num_cpus, resources)
        node.cwd.mkdir()
        self.nodes.append(node)
        return node

    def start_head(self, num_cpus: int) -> Node:
        """`ray start --head` on 127.0.0.1, every port pinned, the dashboard off."""
        node = self._node("head", num_cpus, {})
        (self.port, manager, objects, dashboard, agent, agent_grpc, runtime_env,
         metrics, *workers) = free_ports(8 + WORKER_PORTS)
        argv = [str(RAY), "start", "--head", f"--node-ip-address={HOST}", f"--port={self.port}",
                f"--node-manager-port={manager}", f"--object-manager-port={objects}",
                "--include-dashboard=false", f"--dashboard-port={dashboard}",
                f"--dashboard-agent-listen-port={agent}",
                f"--dashboard-agent-grpc-port={agent_grpc}",
                f"--runtime-env-agent-port={runtime_env}", f"--metrics-export-port={metrics}",
                f"--worker-port-list={','.join(map(str, workers))}",
                f"--num-cpus={num_cpus}", f"--object-store-memory={OBJECT_STORE_BYTES}",
                f"--temp-dir={node.temp_dir}", "--disable-usage-stats", "--log-style=pretty",
                "--log-color=false"]
        if _has_ray_client():  # `ray start --head` would start a client server on 10001
            argv.append(f"--ray-client-server-port={free_ports(1)[0]}")
        node.output = self._start(argv, node, HEAD_ENV)
        node.node_id = self._raylet_node_id(node)
        return node

    def add_node(self, name: str, num_cpus: int, resources: dict[str, float]) -> Node:
        """A node joined to the head, on 127.0.0.1, every port pinned."""
        node = self._node(name, num_cpus, resources)
        (manager, objects, agent, agent_grpc, runtime_env, metrics,
         *workers) = free_ports(6 + WORKER_PORTS)
        params = {
            "node_ip_address": HOST, "gcs_address": self.address, "num_cpus": num_cpus,
            "resources": resources, "temp_dir": str(node.temp_dir),
            "node_manager_port": manager, "object_manager_port": objects,
            "dashboard_agent_listen_port": agent, "metrics_agent_port": agent_grpc,
            "runtime_env_agent_port": runtime_env, "metrics_export_port": metrics,
            "worker_port_list": ",".join(map(str, workers)),
            "object_store_memory": OBJECT_STORE_BYTES,
        }
        node.output = self._start([sys.executable, "-c", _JOIN, json.dumps(params)], node)
        started = json.loads(node.output.strip().splitlines()[-1])
        assert started["node_ip_address"] == HOST, started
        node.node_id = started["node_id"]
        return node

    def _start(self, argv: list[str], node: Node, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(argv, cwd=node.cwd, env={**self.env(), **(env or {})},
                              capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"starting the {node.name} node failed (exit "
                               f"{done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    @staticmethod
    def _raylet_node_id(node: Node) -> str:
        table = _processes()
        for pid in node.pids():
            args = table.get(pid, (0, []))[1]
            if args and args[0].endswith("/raylet"):
                for arg in args:
                    if arg.startswith("--node_id="):
                        return arg.split("=", 1)[1]
        raise AssertionError(f"no raylet found for the {node.name} node")

    def ray(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A `ray` command (`ray status`, ...) run against this cluster."""
        return subprocess.run([str(RAY), *args, f"--address={self.address}"], env=self.env(),
                              cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)

    def python(self, code: str, timeout: float = 120) -> Any:
        """Run `code` (which prints one JSON value last) as a driver of this cluster."""
        done = subprocess.run([sys.executable, "-c", code, self.address], env=self.env(),
                              cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def pids(self) -> set[int]:
        """Every process of every node."""
        return set().union(*(node.pids() for node in self.nodes)) if self.nodes else set()

    def stop(self) -> None:
        """Stop every node (the head last) and remove the temp directories. (A short grace:
        the head's GCS lets a SIGTERM wait for over ten seconds, and nothing needs it now.)"""
        try:
            for node in reversed(self.nodes):
                node.stop(grace=2.0)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def leftovers(self) -> list[str]:
        """The `ps` lines that still name this cluster's directory (none once stopped)."""
        shown = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True,
                               check=True).stdout
        return [line for line in shown.splitlines() if str(self.root) in line
                and str(os.getpid()) != line.split(None, 1)[0]]


def _has_ray_client() -> bool:
    import importlib.util

    return importlib.util.find_spec("grpc") is not None


def sockets(pids: set[int]) -> list[tuple[int, str, str, tuple[str, int], tuple[str, int] | None]]:
    """(pid, process name, status, local address, remote address) of each internet socket
    (TCP and UDP) of `pids` (psutil, which Ray carries)."""
    import psutil
    import ray  # noqa: F401 (puts the psutil it carries on the path, when none is installed)

    found = []
    for pid in pids:
        try:
            process = psutil.Process(pid)
            name = process.name()
            connections = (process.net_connections(kind="inet")
                           if hasattr(process, "net_connections")
                           else process.connections("inet"))
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        for c in connections:
            remote = (c.raddr.ip, c.raddr.port) if c.raddr else None
            found.append((pid, name, c.status, (c.laddr.ip, c.laddr.port), remote))
    return found


def is_loopback_127(ip: str) -> bool:
    """127.0.0.1, or the same written as an IPv4-mapped IPv6 address (a dual-stack socket)."""
    return ip in (HOST, f"::ffff:{HOST}")
