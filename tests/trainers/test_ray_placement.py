"""RayRuntime on a simulated two-node cluster (``ray.cluster_utils.Cluster``, one machine):
rollout workers spread over the nodes, engines and the learner land where ``ray_resources``
says, and a lost node's workers restart on the survivor with the same rollouts. Marked
``ray`` (skipped without Ray, except in CI). Its own module: a Cluster and the private
cluster of tests/trainers/test_ray_runtime.py must not overlap."""

from __future__ import annotations

import pytest

from tests.trainers.test_ray_runtime import assert_same_batch, local_runtime, tiny_config
from trainers.rollout import step_request, training_sampling

pytestmark = [pytest.mark.ray, pytest.mark.slow]
MIB = 2**20


@pytest.fixture
def two_nodes():
    """A head node ("node_a", 4 CPUs) and a second node ("node_b", 3 CPUs), the driver on them."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    ray.shutdown()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 4, "resources": {"node_a": 10}, "object_store_memory": 100 * MIB},
    )
    node_b = cluster.add_node(num_cpus=3, resources={"node_b": 10}, object_store_memory=100 * MIB)
    ray.init(address=cluster.address)
    try:
        yield ray, cluster, cluster.head_node.node_id, node_b
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_workers_spread_and_engines_and_learner_land_where_asked(two_nodes):
    from trainers.ray_runtime import RayRuntime

    ray, _, node_a, node_b = two_nodes
    config = tiny_config(
        runtime="ray",
        rollout_workers=2,
        ray_resources={"engine": {"node_b": 1}, "learner": {"node_a": 1}},
    )
    runtime = RayRuntime(config)
    try:
        workers = {ray.get(w.where.remote())[1] for w in runtime.workers}
        assert workers == {node_a, node_b.node_id}  # one on each node
        assert ray.get(runtime.engines[0].where.remote())[1] == node_b.node_id
        assert ray.get(runtime.learner.where.remote())[1] == node_a
        request = step_request(config, 1, training_sampling(config))
        assert_same_batch(runtime.collect(request), local_runtime(tiny_config()).collect(request), 1e-5)
    finally:
        runtime.close()


def test_a_lost_nodes_workers_restart_on_the_survivor_with_the_same_rollouts(two_nodes):
    from trainers.ray_runtime import RayRuntime

    ray, cluster, node_a, node_b = two_nodes
    pinned = {"engine": {"node_a": 1}, "learner": {"node_a": 1}}  # only rollout workers on node_b
    config = tiny_config(runtime="ray", rollout_workers=2, ray_resources=pinned)
    request = step_request(config, 1, training_sampling(config))
    runtime = RayRuntime(config)
    try:
        before = runtime.collect(request)
        assert {ray.get(w.where.remote())[1] for w in runtime.workers} == {node_a, node_b.node_id}
        cluster.remove_node(node_b)
        assert_same_batch(runtime.collect(request), before)
        assert {ray.get(w.where.remote())[1] for w in runtime.workers} == {node_a}
    finally:
        runtime.close()


def test_resources_no_node_has_fail_at_once(two_nodes):
    from trainers.errors import ConfigError
    from trainers.ray_runtime import RayRuntime

    with pytest.raises(ConfigError, match="node_c"):
        RayRuntime(tiny_config(runtime="ray", ray_resources={"engine": {"node_c": 1}}))
