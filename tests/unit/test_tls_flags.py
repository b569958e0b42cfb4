"""memtier's --cluster-mode (redis-benchmark's --cluster) and --tls, --cert, --key,
--cacert, --tls-skip-verify and --sni (redis-benchmark's --tls) set the target's cluster and
TLS fields."""

from __future__ import annotations

from workbench.cli.flags import Flags, to_overrides


def test_tls_with_a_redis_server_url_makes_it_rediss() -> None:
    out = to_overrides(Flags(server="redis://127.0.0.1:6380", tls=True), {})
    assert 'target.options.url="rediss://127.0.0.1:6380"' in out


def test_the_certificate_flags_set_the_tls_options() -> None:
    flags = Flags(
        server="redis://127.0.0.1:6380",
        tls=True,
        cert="c.pem",
        key="k.pem",
        cacert="ca.pem",
        sni="cache.example",
        tls_skip_verify=True,
    )
    out = to_overrides(flags, {})
    for text in (
        'target.options.tls_cert="c.pem"',
        'target.options.tls_key="k.pem"',
        'target.options.tls_ca="ca.pem"',
        'target.options.tls_sni="cache.example"',
        "target.options.tls_insecure=true",
    ):
        assert text in out


def test_tls_on_memcached_and_on_a_managed_server() -> None:
    assert "target.options.tls=true" in to_overrides(
        Flags(server="memcached://127.0.0.1:11211", tls=True), {}
    )
    managed = {"target": {"system": "redis", "managed": True}}
    assert "target.server.tls=true" in to_overrides(Flags(tls=True), managed)
    plain = {"target": {"system": "redis", "options": {"url": "redis://127.0.0.1:7000/0"}}}
    assert 'target.options.url="rediss://127.0.0.1:7000/0"' in to_overrides(Flags(tls=True), plain)


def test_cluster_mode_sets_the_cluster_fields() -> None:
    given = to_overrides(Flags(server="redis://127.0.0.1:7000", cluster_mode=True), {})
    assert "target.options.cluster=true" in given
    managed = {"target": {"system": "redis", "managed": True}}
    assert "target.server.cluster=true" in to_overrides(Flags(cluster_mode=True), managed)


def test_tls_flags_apply_to_http_targets_too() -> None:
    flags = Flags(
        server="http://127.0.0.1:8443/api",
        tls=True,
        cacert="ca.pem",
        cert="c.pem",
        key="k.pem",
        sni="localhost",
        tls_skip_verify=True,
    )
    out = to_overrides(flags, {})
    assert 'target.options.base_url="https://127.0.0.1:8443/api"' in out
    for text in (
        'target.options.tls_ca="ca.pem"',
        'target.options.tls_cert="c.pem"',
        'target.options.tls_key="k.pem"',
        'target.options.tls_sni="localhost"',
        "target.options.tls_insecure=true",
    ):
        assert text in out
    given = {"target": {"system": "http", "options": {"base_url": "http://127.0.0.1:9000"}}}
    assert 'target.options.base_url="https://127.0.0.1:9000"' in to_overrides(
        Flags(tls=True), given
    )
    managed = {"target": {"system": "http", "managed": True}}
    assert "target.server.tls=true" in to_overrides(Flags(tls=True), managed)
