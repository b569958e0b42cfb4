"""The VCL of a managed varnishd: Varnish as a look-aside cache in front of the origin.

The 003 experiment asks a cache for a key and, on a miss, gives it the value. Varnish
does the same here, one request per operation:

- ``GET /?key=K`` looks K up: a hit is 200 with the value; a miss is 404 at once, without
  asking the origin, so what the client sees is Varnish's own hit or miss.
- ``PUT /?key=K&ttl=S`` goes to the origin, which stores the body; Varnish then restarts
  it as a GET that always misses, fetches the value back and keeps it for the origin's
  max-age (the TTL, rounded up to a second): the object now in Varnish's storage, where
  ``-s malloc,SIZE`` bounds it and the LRU evicts (``n_lru_nuked``). The client gets 204.
- ``DELETE /?key=K`` deletes at the origin, then purges K from Varnish; 200 when the key
  was there, 404 when not.

Objects are keyed by ``key`` alone (the ``ttl`` of a PUT is not part of the name), get no
grace and no keep, so an expired object is gone rather than served stale.
"""

from __future__ import annotations

TEMPLATE = """vcl 4.1;

backend origin {
    .host = "%(host)s";
    .port = "%(port)d";
}

sub vcl_recv {
    if (req.method == "PUT" && req.restarts == 0) {
        return (pass);
    }
    if (req.method == "DELETE" && req.restarts == 0) {
        return (pass);
    }
    if (req.method == "PURGE" && req.restarts > 0) {
        return (purge);
    }
    if (req.method == "GET" && req.http.X-Wb-Fill && req.restarts > 0) {
        set req.hash_always_miss = true;
        return (hash);
    }
    unset req.http.X-Wb-Fill;
    unset req.http.X-Wb-Status;
    if (req.method != "GET") {
        return (synth(405, "expected GET, PUT or DELETE"));
    }
    return (hash);
}

sub vcl_hash {
    hash_data(regsub(req.url, "&ttl=[^&]*", ""));
    return (lookup);
}

sub vcl_miss {
    if (!req.http.X-Wb-Fill) {
        return (synth(404, "miss"));
    }
    return (fetch);
}

sub vcl_backend_fetch {
    if (bereq.http.X-Wb-Fill) {
        # The restarted PUT still carries its Content-Length; its body went to the
        # origin already, and a GET sent with it would swallow the next request.
        unset bereq.body;
        unset bereq.http.Content-Length;
        unset bereq.http.Content-Type;
    }
    return (fetch);
}

sub vcl_backend_response {
    set beresp.grace = 0s;
    set beresp.keep = 0s;
    if (beresp.status != 200) {
        set beresp.ttl = 0s;
        set beresp.uncacheable = true;
    }
    return (deliver);
}

sub vcl_deliver {
    if (req.method == "PUT" && (resp.status == 200 || resp.status == 201)) {
        set req.method = "GET";
        set req.http.X-Wb-Fill = "1";
        return (restart);
    }
    if (req.method == "DELETE" && (resp.status == 200 || resp.status == 404)) {
        set req.http.X-Wb-Status = resp.status;
        set req.method = "PURGE";
        return (restart);
    }
    if (req.http.X-Wb-Fill) {
        if (resp.status == 200) {
            return (synth(204, "stored"));
        }
        return (synth(502, "the origin lost the value"));
    }
    unset resp.http.Age;
    unset resp.http.Via;
}

sub vcl_purge {
    if (req.http.X-Wb-Status == "200") {
        return (synth(200, "deleted"));
    }
    return (synth(404, "absent"));
}

sub vcl_synth {
    set resp.http.Content-Length = "0";
    synthetic("");
    return (deliver);
}
"""


def render(origin_host: str, origin_port: int) -> str:
    """The VCL of a varnishd in front of the origin at host:port."""
    return TEMPLATE % {"host": origin_host, "port": origin_port}
