"""`broker_services_only`: Ray's three hooks are replaced only while a private Ray starts, and
left alone when this Ray lacks one of them. No Ray is started here (the cluster tests check the
processes a `rafka up` runs)."""
from __future__ import annotations

from ray._private import node as ray_node
from ray._private import utils as ray_utils

from rafka.actors import ray_services
from rafka.actors.ray_services import broker_services_only


class FakeNode:
    """What the replaced hooks touch of Ray's Node."""
    _webui_url = "http://127.0.0.1:8265"


def test_the_hooks_are_replaced_while_ray_starts_and_restored_after():
    originals = (ray_node.Node.start_api_server, ray_node.Node.start_monitor,
                 ray_utils.get_dashboard_dependency_error)
    with broker_services_only() as replaced:
        assert replaced
        node = FakeNode()
        ray_node.Node.start_api_server(node, include_dashboard=False, raise_on_failure=False)
        assert node._webui_url is None                       # no dashboard URL to advertise
        assert ray_node.Node.start_monitor(node) is None
        assert isinstance(ray_utils.get_dashboard_dependency_error(), ImportError)   # agent --minimal
    assert (ray_node.Node.start_api_server, ray_node.Node.start_monitor,
            ray_utils.get_dashboard_dependency_error) == originals


def test_the_hooks_are_restored_when_ray_fails_to_start():
    original = ray_node.Node.start_api_server
    try:
        with broker_services_only():
            raise RuntimeError("ray.init failed")
    except RuntimeError:
        pass
    assert ray_node.Node.start_api_server is original


def test_a_ray_without_one_hook_starts_as_usual(monkeypatch):
    monkeypatch.delattr(ray_node.Node, "start_monitor")
    original = ray_node.Node.start_api_server
    with broker_services_only() as replaced:
        assert not replaced
        assert ray_node.Node.start_api_server is original
        assert ray_utils.get_dashboard_dependency_error is not ray_services._no_dashboard_dependencies
